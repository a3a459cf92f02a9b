// Open a static HTML file (nbconvert's export of a notebook) in Chromium with the
// network off and report what a reader sees of agent-kernel's runs: their texts,
// whether any of it is hidden, and every request the page tried to make.
//
// Usage: node offline_page.mjs '<json config>'; config = {file, shots, chromium, name}.
// Prints one line "REPORT <json>". Requests other than file:// are aborted (and the
// context is offline), so nothing reaches the network; they are listed in `attempted`.
import { chromium } from "playwright-core";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { textContrast } from "./contrast.mjs";

const config = JSON.parse(process.argv[2]);
const report = { attempted: [], errors: [], page_errors: [], shots: [] };

async function main() {
  const browser = await chromium.launch({
    executablePath: config.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 },
      timezoneId: "UTC", offline: true });
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("file:")) return route.continue();
      report.attempted.push(url);
      return route.abort("internetdisconnected");
    });
    const page = await context.newPage();
    page.on("pageerror", (err) => report.page_errors.push(err.message));
    await page.goto(pathToFileURL(config.file).href, { waitUntil: "load" });
    // Scripts added on DOMContentLoaded (the widget loader) fire their requests after load.
    await page.waitForTimeout(1500);
    report.as_opened = await page.evaluate(inspect);
    await shot(page, `${config.name}-as-opened`);
    await page.evaluate(() => {
      document.querySelectorAll(".agent-kernel-run details").forEach((d) => { d.open = true; });
    });
    report.cards_opened = await page.evaluate(inspect);
    // every text of the runs, cards open (warning words included), against its background
    report.contrast = await page.evaluate(textContrast, ".agent-kernel-run");
    await shot(page, `${config.name}-cards-opened`);
  } catch (err) {
    report.errors.push(String(err && err.stack ? err.stack : err));
  } finally {
    await browser.close();
    console.log("REPORT " + JSON.stringify(report));
  }
}

async function shot(page, name) {
  const file = path.join(config.shots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  report.shots.push(file);
}

// Runs in the page: every run's texts, and every piece of text a reader cannot see.
function inspect() {
  const runs = [...document.querySelectorAll(".agent-kernel-run")];
  const texts = (root, css) => [...root.querySelectorAll(css)].map((e) => e.innerText.trim());
  // Text that a closed <details> keeps folded is meant to wait for a click.
  const folded = (el) => {
    const details = el.closest("details");
    return details && !details.open && !el.closest("summary");
  };
  // A box that shows less than it holds (a scrolling JSON block is drawn that way on purpose).
  const clipped = (el) => {
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      if (e.matches("pre.ak-json")) return null;
      const style = getComputedStyle(e);
      const cuts = (style.overflowY !== "visible" && e.scrollHeight > e.clientHeight + 1) ||
        (style.overflowX !== "visible" && e.scrollWidth > e.clientWidth + 1);
      if (cuts) return `${e.tagName.toLowerCase()}.${[...e.classList].join(".")}`;
    }
    return null;
  };
  const hidden = [];
  for (const run of runs) {
    const walker = document.createTreeWalker(run, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || el.closest("style") || folded(el)) continue;
      const style = getComputedStyle(el);
      const range = document.createRange();
      range.selectNodeContents(node);
      const box = range.getBoundingClientRect();
      const why = style.display === "none" || !el.getClientRects().length ? "not displayed"
        : style.visibility !== "visible" ? `visibility ${style.visibility}`
          : Number(style.opacity) === 0 ? "transparent"
            : box.width < 1 || box.height < 1 ? "no size"
              : clipped(el) ? `clipped by ${clipped(el)}` : null;
      if (why) hidden.push({ text: node.textContent.trim().slice(0, 60), why });
    }
  }
  return {
    runs: runs.map((run) => ({
      text: run.innerText,
      status: texts(run, ".agent-kernel-status")[0] ?? "",
      prompt: texts(run, ".ak-prompt")[0] ?? "",
      summaries: texts(run, "details.agent-kernel-tool > summary"),
      cards_open: [...run.querySelectorAll("details.agent-kernel-tool")].map((d) => d.open),
      replies: texts(run, ".agent-kernel-reply"),
      answered: texts(run, ".agent-kernel-answered"),
      blocks: texts(run, "pre"),
    })),
    hidden,
    widget_errors: (document.body.innerText.match(/Error displaying widget/g) || []).length,
    raw_run_json: document.body.innerText.includes('"run_id"'),
    scripts_in_runs: document.querySelectorAll(".agent-kernel-run script").length,
    output_areas: document.querySelectorAll(".jp-OutputArea-output").length,
  };
}

main();
