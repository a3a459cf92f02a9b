// Open pages that show hostile strings (a saved notebook in JupyterLab with and without
// agent-kernel's extension, nbconvert's HTML of it) and report what the browser made of
// them: any element or attribute in an output that runs or loads, whether a payload ran
// (window.akPwned set, a dialog opened), and every request to a host that is not this
// machine (all are aborted and counted). Without the extension, the notebook's last cell
// is run in its kernel: it shows the live ipywidgets with the payloads in them.
// At the end, "show" on one held image in the extension's view must make its request.
//
// Usage: node hostile.mjs '<json config>'; config = {pages: [{name, url, kind: "lab" |
// "file", extension: bool, runLast?: bool, before?: [{write: path, text}]}],
// restore?: {write: path, text} (before the click), shots, chromium, profile}. Prints one line "REPORT <json>".
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";

const config = JSON.parse(process.argv[2]);
const report = { pages: {}, errors: [], shots: [], remote: [], dialogs: [] };
const TIMEOUT = 60_000;
let current = "start"; // the page being looked at, named in what the report says

async function main() {
  fs.rmSync(config.profile, { recursive: true, force: true });
  const context = await chromium.launchPersistentContext(config.profile, {
    executablePath: config.chromium,
    headless: true,
    viewport: { width: 1200, height: 2400 },
    timezoneId: "UTC",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (/^(file:|data:|blob:|about:)/.test(url) || /^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(url)) {
      return route.continue();
    }
    report.remote.push(url);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("dialog", (dialog) => {
    // Leaving JupyterLab asks "leave the page?": that one is the page's own, and is accepted.
    if (dialog.type() === "beforeunload") return dialog.accept().catch(() => {});
    report.dialogs.push(`${current}: ${dialog.type()}: ${dialog.message()}`);
    return dialog.dismiss().catch(() => {});
  });
  page.on("pageerror", (err) => report.errors.push(`pageerror: ${err.message}`));
  try {
    for (const spec of config.pages) {
      for (const change of spec.before ?? []) {
        fs.mkdirSync(path.dirname(change.write), { recursive: true });
        fs.writeFileSync(change.write, change.text);
      }
      current = spec.name;
      report.pages[spec.name] = await openPage(page, spec);
    }
    report.before_click = report.remote.length;
    current = "show image";
    if (config.restore) fs.writeFileSync(config.restore.write, config.restore.text);
    report.click = await showOneImage(page, config.pages.find((p) => p.extension));
  } catch (err) {
    report.errors.push(String(err && err.stack ? err.stack : err));
    await shot(page, "failure", page).catch(() => {});
  } finally {
    await context.close();
    console.log("REPORT " + JSON.stringify(report));
  }
}

async function openPage(page, spec) {
  await page.goto(spec.url, { waitUntil: "domcontentloaded" });
  const scope = spec.kind === "lab" ? ".jp-OutputArea-output" : "body";
  if (spec.kind === "lab") {
    await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ timeout: TIMEOUT });
    await dismissKernelDialog(page);
    const drawn = spec.extension ? ".agent-kernel-lab-run .akl-run" : ".agent-kernel-run";
    await page.locator(drawn).first().waitFor({ timeout: TIMEOUT });
    if (spec.runLast) await runLastCell(page);
  } else {
    await page.locator(".agent-kernel-run").first().waitFor({ timeout: TIMEOUT });
  }
  await page.waitForTimeout(1000); // Markdown and images (if any were let through)
  await page.evaluate((scope) => {
    document.querySelectorAll(`${scope} details`).forEach((d) => { d.open = true; });
  }, scope);
  await page.waitForTimeout(1000);
  const found = await page.evaluate(inspect, scope);
  const outputs = spec.kind === "lab" ? ".jp-Notebook .jp-Cell .jp-OutputArea" : ".jp-Cell-outputWrapper";
  const cells = page.locator(outputs);
  for (let i = 0; i < (await cells.count()); i++) {
    await shot(page, `${spec.name}-view${i + 1}`, cells.nth(i));
  }
  return found;
}

// The last cell displays the live ipywidgets (a question and an approval)
// with the payloads in them: run it in the notebook's kernel and wait for them.
async function runLastCell(page) {
  await page.getByText(/\| Idle/).first().waitFor({ timeout: TIMEOUT });
  const cell = page.locator(".jp-Notebook .jp-Cell").last();
  await cell.scrollIntoViewIfNeeded();
  await cell.locator(".jp-InputArea-editor").click();
  await page.keyboard.press("Control+Enter");
  await page.waitForFunction(() => {
    const prompt = [...document.querySelectorAll(".jp-Notebook .jp-Cell")].at(-1)
      ?.querySelector(".jp-InputPrompt");
    return /\[\d+\]/.test(prompt?.textContent ?? "") && document.querySelector(".widget-html-content");
  }, null, { timeout: TIMEOUT });
  await page.waitForTimeout(2000); // every widget view drawn
}

async function showOneImage(page, spec) {
  if (!spec) return null;
  await page.goto(spec.url, { waitUntil: "domcontentloaded" });
  await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ timeout: TIMEOUT });
  await dismissKernelDialog(page);
  const button = page.locator(".agent-kernel-lab-run .akl-show-image").first();
  await button.waitFor({ timeout: TIMEOUT });
  const before = report.remote.length;
  const url = await button.getAttribute("data-src");
  await button.click();
  await page.waitForTimeout(1000);
  return { url, requests: report.remote.slice(before),
           images: await page.locator(".agent-kernel-lab-run img").count() };
}

async function dismissKernelDialog(page) {
  const dialog = page.locator(".jp-Dialog");
  try {
    await dialog.first().waitFor({ timeout: 5000 });
  } catch {
    return;
  }
  const noKernel = dialog.getByRole("button", { name: /No Kernel|Cancel/ });
  if (await noKernel.count()) await noKernel.first().click();
  else await page.keyboard.press("Escape");
}

// Screenshots are for people to look at (the top 1600 px of each view); one that times
// out is noted, not a failure.
async function shot(page, name, target) {
  const file = path.join(config.shots, `${name}.png`);
  try {
    if (target === page) {
      await page.screenshot({ path: file, animations: "disabled" });
    } else {
      await target.evaluate((e) => e.scrollIntoView({ block: "start" }));
      const box = await target.boundingBox();
      if (!box || box.height < 1) return; // an output area with nothing in it
      const view = page.viewportSize();
      const y = Math.max(0, box.y);
      await page.screenshot({ path: file, animations: "disabled", timeout: 60_000,
        clip: { x: box.x, y, width: box.width, height: Math.min(box.height, 1600, view.height - y) } });
    }
    report.shots.push(file);
  } catch (err) {
    report.shot_errors = [...(report.shot_errors ?? []), `${name}: ${String(err).slice(0, 200)}`];
  }
}

// Runs in the page: every element under the outputs that could run or load something.
function inspect(scope) {
  const forbidden = new Set(["script", "img", "iframe", "frame", "object", "embed", "form",
    "meta", "link", "svg", "video", "audio", "source", "input", "textarea", "base", "math",
    "style"]);
  const bad = [];
  const tags = new Set();
  let elements = 0;
  for (const root of document.querySelectorAll(scope)) {
    for (const el of root.querySelectorAll("*")) {
      elements += 1;
      const tag = el.localName;
      tags.add(tag);
      // Our own <style> blocks (the fallbacks' CSS) hold no url() and no @import.
      if (tag === "style") {
        if (/url\s*\(|@import|expression/i.test(el.textContent)) bad.push(`style: ${el.textContent.slice(0, 80)}`);
        continue;
      }
      if (forbidden.has(tag) && !el.closest(".jp-RenderedSVG, .jp-icon")) bad.push(`<${tag}> ${el.outerHTML.slice(0, 120)}`);
      for (const attr of el.attributes) {
        const name = attr.name.toLowerCase();
        const value = attr.value;
        if (name.startsWith("on")) bad.push(`${tag}[${name}=${value.slice(0, 60)}]`);
        if (["src", "srcset", "action", "formaction", "background", "poster", "http-equiv"].includes(name)) bad.push(`${tag}[${name}]`);
        if (name === "style" && /url\s*\(|expression/i.test(value)) bad.push(`${tag}[style=${value.slice(0, 60)}]`);
        if (name === "href" && !/^(https?:|mailto:)/i.test(value.trim())) bad.push(`${tag}[href=${value.slice(0, 60)}]`);
      }
    }
  }
  return {
    bad, elements, tags: [...tags].sort(),
    pwned: window.akPwned ?? null,
    dark: document.body.dataset.jpThemeLight === "false",
    extension_runs: document.querySelectorAll(".agent-kernel-lab-run .akl-run").length,
    fallback_runs: document.querySelectorAll(".agent-kernel-run").length,
    held_images: document.querySelectorAll(".akl-held-image, .ak-held-image").length,
    widgets: document.querySelectorAll(".widget-html-content").length,
    boards: document.querySelectorAll(".agent-kernel-lab-board .agent-kernel-team-board").length,
    payload_text: (document.body.innerText.match(/<script>window\.akPwned=1<\/script>/g) || []).length,
  };
}

main();
