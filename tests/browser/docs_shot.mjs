// Save one notebook cell drawn by agent-kernel's JupyterLab extension as a PNG for docs/.
// Usage: node docs_shot.mjs '<json config>'; config = {url, file, chromium, profile, dark}.
// Opens the first tool card and recall's as a reader would (a click on the summary); fails unless
// the theme is the one asked for. Used by docs_images.py.
import { chromium } from "playwright-core";
import fs from "node:fs";

const config = JSON.parse(process.argv[2]);
const TIMEOUT = 60_000;

fs.rmSync(config.profile, { recursive: true, force: true });
const context = await chromium.launchPersistentContext(config.profile, {
  executablePath: config.chromium, headless: true, deviceScaleFactor: 1,
  viewport: { width: 900, height: 1400 }, timezoneId: "UTC",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(config.url, { waitUntil: "domcontentloaded" });
  await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ timeout: TIMEOUT });
  // The notebook names a kernel that does not exist: choose none.
  const dialog = page.locator(".jp-Dialog");
  if (await dialog.first().waitFor({ timeout: 5000 }).then(() => true, () => false)) {
    await dialog.getByRole("button", { name: /No Kernel|Cancel/ }).first().click();
  }
  await page.locator(".agent-kernel-lab-run .akl-run").first().waitFor({ timeout: TIMEOUT });
  // The file browser takes a third of the width: fold it away as a reader might.
  const openTab = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current");
  if (await openTab.count()) await openTab.first().click();
  await page.locator(".agent-kernel-lab-run .akl-tool > summary").first().click();
  // and recall's card, whose memories read as a short list
  const recall = page.locator(".agent-kernel-lab-run .akl-tool > summary", { hasText: "recall" });
  if (await recall.count()) await recall.first().click();
  await page.mouse.move(0, 0);
  await page.waitForTimeout(500); // Markdown is rendered asynchronously
  const dark = await page.evaluate(() => document.body.dataset.jpThemeLight === "false");
  if (dark !== config.dark) throw new Error(`the theme is ${dark ? "dark" : "light"}`);
  await page.locator(".jp-Notebook .jp-Cell").first().screenshot({ path: config.file });
} finally {
  await context.close();
}
