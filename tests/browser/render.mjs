// Open a saved notebook in JupyterLab (no kernel) and report how agent-kernel's
// MIME renderer drew its runs: texts, structure, and the contrast of every piece
// of text against the background it is drawn on. Takes screenshots.
//
// Usage: node render.mjs '<json config>'; config = {url, shots, chromium, profile,
// theme (a name for the screenshots), expectDark}. Prints one line "REPORT <json>".
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";
import { textContrast } from "./contrast.mjs";

const config = JSON.parse(process.argv[2]);
const report = { theme: config.theme, errors: [], console: [], shots: [] };
const TIMEOUT = 60_000;

async function main() {
  fs.rmSync(config.profile, { recursive: true, force: true });
  const context = await chromium.launchPersistentContext(config.profile, {
    executablePath: config.chromium,
    headless: true,
    viewport: { width: 1100, height: 3400 },
    timezoneId: "UTC",
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (err) => report.errors.push(`pageerror: ${err.message}`));
  page.on("console", (msg) => {
    if (/agent-kernel|akl-/i.test(msg.text())) report.console.push(msg.text());
  });
  try {
    await page.goto(config.url, { waitUntil: "domcontentloaded" });
    await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ timeout: TIMEOUT });
    await dismissKernelDialog(page);
    await page.locator(".agent-kernel-lab-run .akl-run").first().waitFor({ timeout: TIMEOUT });
    await page.waitForTimeout(500); // Markdown is rendered asynchronously
    // Every card open, so what it holds is on the screenshot and measured.
    await page.evaluate(() => {
      document.querySelectorAll(".agent-kernel-lab-run details").forEach((d) => { d.open = true; });
    });
    await page.waitForTimeout(300);
    Object.assign(report, await page.evaluate(inspect));
    report.contrast = await page.evaluate(textContrast, ".agent-kernel-lab-run");
    const cells = page.locator(".jp-Notebook .jp-Cell");
    for (let i = 0; i < (await cells.count()); i++) {
      await shot(page, `${config.theme}-cell${i + 1}`, cells.nth(i).locator(".jp-OutputArea"));
    }
    await shot(page, `${config.theme}-page`, page);
  } catch (err) {
    report.errors.push(String(err && err.stack ? err.stack : err));
    await shot(page, `${config.theme}-failure`, page).catch(() => {});
  } finally {
    await context.close();
    console.log("REPORT " + JSON.stringify(report));
  }
}

// A notebook whose kernel does not exist asks which kernel to start: choose none.
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
  report.kernel_dialog = true;
}

async function shot(page, name, target) {
  const file = path.join(config.shots, `${name}.png`);
  await target.screenshot({ path: file });
  report.shots.push(file);
}

// Runs in the page: what the renderer drew, and the contrast of its text.
function inspect() {
  const roots = [...document.querySelectorAll(".agent-kernel-lab-run")];
  const texts = (root, css) => [...root.querySelectorAll(css)].map((e) => e.innerText.trim());

  const json = document.querySelector(".agent-kernel-lab-run .akl-json");
  return {
    dark: document.body.dataset.jpThemeLight === "false",
    roots: roots.length,
    html_fallbacks: document.querySelectorAll(".jp-OutputArea-output .agent-kernel-run").length,
    widget_errors: (document.body.innerText.match(/Error displaying widget/g) || []).length,
    runs: roots.map((root) => ({
      status: texts(root, ".akl-status")[0] ?? "",
      header: texts(root, ".akl-header")[0] ?? "",
      prompt: texts(root, ".akl-prompt")[0] ?? "",
      tools: texts(root, ".akl-tool-summary"),
      tool_states: [...root.querySelectorAll(".akl-tool")].map((e) => e.dataset.state),
      ledger: texts(root, ".akl-ledger"),
      outcomes: texts(root, ".akl-outcome"),
      questions: texts(root, ".akl-question-text"),
      args: [...root.querySelectorAll(".akl-tool")].map((card) =>
        [...card.querySelectorAll(".akl-args th")].map((th) => th.innerText.trim())),
      blocks: texts(root, ".akl-result .akl-block"),
      table_rows: root.querySelectorAll(".akl-table tbody tr").length,
      memories: texts(root, ".akl-memory-text"),
      memory_lines: texts(root, ".akl-memory .ak-memory-line"),
      memory_ids: [...root.querySelectorAll(".akl-memory-ids li")].map((e) => e.textContent.trim()),
      memory_shown: [...root.querySelectorAll(".akl-memories")].map(
        (box) => [...box.querySelectorAll(".akl-memory")].map((e) => e.innerText).join("\n")),
      errors: texts(root, ".akl-error-text, .akl-error"),
      notices: texts(root, ".akl-notice"),
      markdown_strong: texts(root, ".akl-text strong"),
      agents: [...root.querySelectorAll(".akl-agent")].map((box) => ({
        role: box.dataset.agentRole,
        summary: box.querySelector(":scope > .akl-agent-summary").innerText.trim(),
        inside: box.parentElement.closest(".akl-agent")?.dataset.agentRole ?? null,
        tools: [...box.querySelectorAll(":scope > .akl-tool .akl-tool-summary")].map(
          (e) => e.innerText.trim()),
      })),
      text: root.innerText,
    })),
    unsafe: document.querySelectorAll(
      ".agent-kernel-lab-run script, .agent-kernel-lab-run [onerror]").length,
    xss: window.__akl_xss ?? null,
    json_block: json ? {
      max_height: getComputedStyle(json).maxHeight,
      scrolls: json.scrollHeight > json.clientHeight,
    } : null,
  };
}

main();
