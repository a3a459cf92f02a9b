// A live run's controls hold still, and come back after a reload (issue 25, items 1, 2).
//
// Usage: node live.mjs '<json config>' (as drive.mjs: {url, shots, chromium, profile}).
// The notebook: cell 0 `%load_ext agent_kernel`, cells 1 and 2 each a run whose command
// waits for approval (cell 2 queued behind cell 1), cell 3 prints a line, the last two
// cells give approvals 20 s and ask for one (the countdown). Prints one line
// "REPORT <json>" last.
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";
import { textContrast } from "./contrast.mjs";

const config = JSON.parse(process.argv[2]);
const report = { steps: {}, errors: [], shots: [] };
const STEP = 60_000;
const ENDED = ["done", "done_with_failures", "denied", "stopped", "failed", "limit"];
const CLICKS = 100;
const APPROVE = "button.agent-kernel-approval:not([disabled])";

function log(...parts) {
  console.log(new Date().toISOString(), ...parts);
}

async function shot(page, name, target) {
  const file = path.join(config.shots, `${String(report.shots.length + 1).padStart(2, "0")}-${name}.png`);
  await (target ?? page).screenshot({ path: file });
  report.shots.push(file);
}

const cell = (page, i) => page.locator(".jp-Notebook .jp-Cell").nth(i);
const prompt = async (page, i) => (await cell(page, i).locator(".jp-InputPrompt").first().innerText()).trim();

async function run(page, i) {
  const before = await prompt(page, i);
  for (let attempt = 0; attempt < 3; attempt++) {
    await cell(page, i).scrollIntoViewIfNeeded();
    await cell(page, i).locator(".jp-InputArea-editor").click();
    await page.keyboard.press("Control+Enter");
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const now = await prompt(page, i);
      if (now !== before || now === "[*]:") return;
      await page.waitForTimeout(100);
    }
  }
  throw new Error(`cell ${i} would not start`);
}

async function status(page, i) {
  const label = cell(page, i).locator(".akl-status");
  return (await label.count()) ? ((await label.first().getAttribute("data-status")) ?? "") : "";
}

async function waitStatus(page, i, words, timeout = STEP) {
  const deadline = Date.now() + timeout;
  let seen = "";
  while (Date.now() < deadline) {
    seen = await status(page, i);
    if (words.includes(seen)) return seen;
    await page.waitForTimeout(100);
  }
  throw new Error(`cell ${i}: status never became ${words.join("/")} (last: ${seen})`);
}

function approveOf(page, i, name = "Approve") {
  return cell(page, i).locator(APPROVE, { hasText: name }).first();
}

// While an approval waits: the same node, focus kept, a selection kept, every click counted.
async function holdStill(page) {
  const step = { dark: await page.evaluate(() => document.body.dataset.jpThemeLight === "false") };
  await run(page, 1);
  const approve = approveOf(page, 1);
  await approve.waitFor({ timeout: STEP });
  const handle = await approve.elementHandle();
  step.region_waiting = await cell(page, 1).locator(".akl-live-region").textContent();
  step.marks = await cell(page, 1).locator(".akl-mark").evaluateAll(
    (marks) => marks.map((m) => m.getAttribute("aria-label")));
  // Tab from the header's Stop reaches Approve and Deny.
  await cell(page, 1).locator("button.akl-stop").focus();
  const reached = [];
  for (let i = 0; i < 8 && reached.length < 3; i++) {
    await page.keyboard.press("Tab");
    const name = await page.evaluate(() => {
      const el = document.activeElement;
      return el && el.tagName === "BUTTON" ? el.textContent : el ? el.tagName : "";
    });
    if (["Approve", "Deny"].includes(name)) reached.push(name);
  }
  step.tab_reached = reached;
  await handle.focus();
  // Select the prompt's words: the selection must outlive the updates.
  step.selected = await cell(page, 1).locator(".akl-prompt").evaluate((node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return selection.toString();
  });
  const elapsedBefore = await cell(page, 1).locator(".akl-elapsed").textContent();
  await page.waitForTimeout(5000);
  step.elapsed_moved = elapsedBefore !== (await cell(page, 1).locator(".akl-elapsed").textContent());
  step.same_node = await handle.evaluate((node, sel) => {
    const now = [...document.querySelectorAll(sel)].find((b) => b.textContent === "Approve");
    return node.isConnected && now === node;
  }, APPROVE);
  step.focus_kept = await handle.evaluate((node) => document.activeElement === node);
  step.selection_after = await page.evaluate(() => window.getSelection().toString());
  await shot(page, `waiting-${step.dark ? "dark" : "light"}`, cell(page, 1));
  // 100 clicks on the card's summary (each folds or unfolds it), pressed 50 ms to 1.5 s.
  const summary = cell(page, 1).locator("details.akl-tool > summary").first();
  await summary.scrollIntoViewIfNeeded();
  const summaryHandle = await summary.elementHandle();
  await summaryHandle.evaluate((node) => {
    window.__aklClicks = 0;
    node.addEventListener("click", () => { window.__aklClicks += 1; });
  });
  let flips = 0;
  const held = [];
  for (let i = 0; i < CLICKS; i++) {
    const hold = Math.round(50 + 1450 * (i / (CLICKS - 1)) ** 2);
    held.push(hold);
    const before = await summaryHandle.evaluate((node) => node.parentElement.open);
    const box = await summaryHandle.boundingBox();
    await page.mouse.move(box.x + 30, box.y + box.height / 2);
    await page.mouse.down();
    await page.waitForTimeout(hold);
    await page.mouse.up();
    await page.waitForTimeout(30);
    const after = await summaryHandle.evaluate((node) => node.parentElement.open);
    if (after !== before) flips += 1;
  }
  step.clicks = CLICKS;
  step.clicks_arrived = await page.evaluate(() => window.__aklClicks);
  step.flips = flips;
  step.held_min_ms = Math.min(...held);
  step.held_max_ms = Math.max(...held);
  step.summary_same_node = await summaryHandle.evaluate((node) => node.isConnected);
  step.approve_same_node_after_clicks = await handle.evaluate((node) => node.isConnected);
  report.steps.hold = step;
  log("hold", JSON.stringify(step));
}

// Reload while the approval waits; approve from the reloaded page; the queued run runs.
async function reattach(page) {
  const step = {};
  await run(page, 2);
  await page.waitForTimeout(1500);
  step.queued_words = await cell(page, 2).locator(".akl-status").textContent();
  await shot(page, "queued", page);
  await page.keyboard.press("Control+s");
  await page.waitForTimeout(1500);
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ state: "attached", timeout: STEP });
  await page.getByText(/\| Idle/).first().waitFor({ timeout: STEP });
  const approve = approveOf(page, 1);
  const started = Date.now();
  await approve.waitFor({ timeout: STEP });
  step.controls_back_ms = Date.now() - started;
  step.queued_after_reload = await cell(page, 2).locator(".akl-status").textContent();
  await shot(page, "reloaded", page);
  // The keyboard: a focused Approve pressed with Enter approves.
  await approve.focus();
  await page.keyboard.press("Enter");
  step.first = await waitStatus(page, 1, ENDED);
  step.first_outcome = await cell(page, 1).locator(".akl-approval .akl-outcome").first().textContent();
  step.region_done = await cell(page, 1).locator(".akl-live-region").textContent();
  const next = approveOf(page, 2);
  await next.waitFor({ timeout: STEP });
  await next.click();
  step.second = await waitStatus(page, 2, ENDED);
  await run(page, 3);
  await cell(page, 3).locator(".jp-OutputArea-output", { hasText: "NEXT" }).waitFor({ timeout: STEP });
  step.next = (await cell(page, 3).locator(".jp-OutputArea-output").first().innerText()).trim();
  await page.keyboard.press("Control+s");
  await page.waitForTimeout(1500);
  await shot(page, "after-reload-done", page);
  report.steps.reattach = step;
  // A code block of the answer: the tool cards' look, Copy, and Insert as a cell below.
  const code = { cells_before: await page.locator(".jp-Notebook .jp-Cell").count() };
  const frame = cell(page, 1).locator(".akl-answer-code").first();
  await frame.waitFor({ timeout: STEP });
  code.block = (await frame.locator("pre.akl-block").innerText()).trim();
  code.buttons = await frame.locator("button.akl-code-tool").allInnerTexts();
  code.look = await frame.evaluate((node) => {
    const pre = node.querySelector("pre");
    const style = getComputedStyle(pre);
    return { padding: style.padding,
      border: style.borderTopWidth + " " + style.borderTopStyle, background: style.backgroundColor };
  });
  await frame.locator("button", { hasText: "Copy" }).click();
  // the clipboard write is asynchronous: give the button its moment to say so
  await frame.locator("button.akl-code-tool", { hasText: "Copied" }).first()
    .waitFor({ timeout: 3000 }).catch(() => {});
  code.copy_said = await frame.locator("button.akl-code-tool").first().innerText();
  code.clipboard = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => `error: ${e}`);
  await frame.locator("button", { hasText: "Insert as a cell below" }).click();
  await page.waitForTimeout(500);
  code.cells_after = await page.locator(".jp-Notebook .jp-Cell").count();
  code.inserted = (await cell(page, 2).locator(".jp-InputArea-editor").innerText()).trim();
  code.inserted_prompt = await prompt(page, 2);
  await shot(page, "code-inserted", page);
  report.steps.code = code;
  log("code", JSON.stringify(code));
  log("reattach", JSON.stringify(step));
}

// The last part of a wait: the time left turns bold behind a warning mark, and its text
// (and the mark) keep their contrast, light and dark. The notebook's last two cells: one
// gives the session's approvals 20 s (late from 10 s left), one asks for an approval.
// The index of the cell whose source holds `text` (an inserted cell shifts the others).
async function cellWith(page, text) {
  const sources = await page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor").allInnerTexts();
  const found = sources.findIndex((source) => source.includes(text));
  if (found < 0) throw new Error(`no cell holds ${text}`);
  return found;
}

async function countdown(page) {
  const last = await cellWith(page, "echo late");
  await run(page, last - 1);
  await page.waitForTimeout(1000);
  await run(page, last);
  const card = `.jp-Notebook .jp-Cell:nth-child(${last + 1}) .akl-tool[data-state='waiting']`;
  const line = page.locator(`${card} .akl-countdown`).first();
  await line.waitFor({ timeout: STEP });
  const measure = async () => {
    const found = await page.evaluate(textContrast, card);
    const text = found.filter((m) => m.element.includes("akl-countdown"));
    const look = await line.evaluate((el) => {
      const parse = (css) => (css.match(/[\d.]+/g) || []).map(Number);
      const lum = (c) => {
        const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
      };
      let bg = [255, 255, 255];
      const chain = [];
      for (let e = el; e; e = e.parentElement) chain.unshift(e);
      for (const e of chain) {
        const c = parse(getComputedStyle(e).backgroundColor);
        const a = c.length > 3 ? c[3] : 1;
        if (c.length >= 3 && a > 0) bg = bg.map((v, i) => c[i] * a + v * (1 - a));
      }
      const before = getComputedStyle(el, "::before");
      const mark = before.content && before.content !== "none" ? parse(before.color) : null;
      const ratio = (x, y) => {
        const [hi, lo] = [lum(x), lum(y)].sort((p, q) => q - p);
        return Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100;
      };
      return { late: el.classList.contains("akl-countdown-late"),
        weight: getComputedStyle(el).fontWeight, mark: before.content,
        mark_ratio: mark ? ratio(mark, bg) : null };
    });
    return { text: text.map((m) => m.text).join(" "), ratios: text.map((m) => m.ratio), ...look };
  };
  const step = { early: await measure() };
  await shot(page, "countdown-early", cell(page, last));
  await page.locator(`${card} .akl-countdown-late`).first().waitFor({ timeout: 20_000 });
  step.late = await measure();
  await shot(page, "countdown-late", cell(page, last));
  await approveOf(page, last).click();
  step.status = await waitStatus(page, last, ENDED);
  report.steps.countdown = step;
  log("countdown", JSON.stringify(step));
}

// A run whose controls cannot come back: the page is reloaded while the kernel is busy
// in a cell, so nothing answers. The run says so and how to stop it (`%agent_stop`);
// `%agent_stop` in the next cell (queued behind the busy one) stops it.
async function stranded(page) {
  const step = {};
  const asks = await cellWith(page, "echo stranded");
  await run(page, asks);
  await approveOf(page, asks).waitFor({ timeout: STEP });
  await run(page, asks + 1); // time.sleep(25): the kernel answers nothing meanwhile
  await page.waitForTimeout(1000);
  await page.keyboard.press("Control+s");
  await page.waitForTimeout(1500);
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ state: "attached", timeout: STEP });
  const lost = cell(page, asks).locator(".akl-lost");
  const started = Date.now();
  await lost.waitFor({ timeout: STEP });
  step.lost_after_ms = Date.now() - started;
  step.lost = (await lost.innerText()).trim();
  step.lost_stop = await lost.locator("button.akl-lost-stop").count();
  step.buttons_while_lost = await cell(page, asks).locator(APPROVE).count();
  await shot(page, "stranded", cell(page, asks));
  await run(page, asks + 2); // %agent_stop, queued behind the sleeping cell
  step.status = await waitStatus(page, asks, ENDED, 90_000);
  step.header = (await cell(page, asks).locator(".akl-status").first().innerText()).trim();
  step.lost_left = await cell(page, asks).locator(".akl-lost").count();
  await page.keyboard.press("Control+s"); // the stopped run's final form is what is kept
  await page.waitForTimeout(1500);
  await shot(page, "stranded-stopped", cell(page, asks));
  report.steps.stranded = step;
  log("stranded", JSON.stringify(step));
}

async function main() {
  fs.rmSync(config.profile, { recursive: true, force: true });
  const context = await chromium.launchPersistentContext(config.profile, {
    executablePath: config.chromium,
    headless: true,
    viewport: { width: 1280, height: 1100 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (err) => report.errors.push(`pageerror: ${err.message}`));
  try {
    await page.goto(config.url, { waitUntil: "domcontentloaded" });
    await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ state: "attached", timeout: STEP });
    await page.getByText(/\| Idle/).first().waitFor({ timeout: STEP });
    await run(page, 0);
    await page.waitForTimeout(1500);
    await holdStill(page);
    await reattach(page);
    await countdown(page);
    await stranded(page);
  } catch (err) {
    report.errors.push(String(err && err.stack ? err.stack : err));
    await shot(page, "failure", page).catch(() => {});
  } finally {
    await context.close();
    console.log("REPORT " + JSON.stringify(report));
  }
}

await main();
