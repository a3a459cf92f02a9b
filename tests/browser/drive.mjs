// Runs are drawn by the labextension (.akl-*) when it is installed, else by the
// text/html fallback (.agent-kernel-*): selectors accept both.
// Drive JupyterLab in Debian's Chromium with playwright-core: run agent-kernel
// cells, click real widget buttons, take a screenshot of each step.
//
// Usage: node drive.mjs '<json config>'; config = {url, scenario, shots, chromium,
// profile}. Prints progress lines and, last, one line "REPORT <json>" that the
// Python side reads. Scenarios: "test" (the browser test), "team" (the team's
// transcript and board, test_team_lab.py), "exact" (an approval's exact arguments,
// test_exact_approval.py) and "latency" (benchmarks/click_latency.py).
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";
import { textContrast } from "./contrast.mjs";

const config = JSON.parse(process.argv[2]);
const report = { scenario: config.scenario, steps: {}, errors: [], shots: [] };
const STEP_TIMEOUT = 60_000;
const ENDED = ["done", "done_with_failures", "denied", "stopped", "failed", "limit"];
const RUN_CELLS = [1, 2, 3, 4, 5, 6];
// test_jupyterlab's last cell: `%agent_triggers cancel` of the every-2-s trigger, as a
// person without our extension reads it in the panel's controls.
const CANCEL_CELL = 13;
// "extension": our extension draws the live controls inside each run output.
// "widgets": the extension is disabled and the kernel's ipywidgets controls are used.
const EXT = (config.controls ?? "extension") === "extension";
// Where a question's or an approval's outcome reads once answered.
const OUTCOME = EXT ? ".akl-question .akl-outcome, .akl-approval .akl-outcome" : ".agent-kernel-outcome";
const PRIMARY = EXT ? "jp-mod-accept" : "mod-primary";

function log(...parts) {
  console.log(new Date().toISOString(), ...parts);
}

async function main() {
  fs.rmSync(config.profile, { recursive: true, force: true });
  const context = await chromium.launchPersistentContext(config.profile, {
    executablePath: config.chromium,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (err) => report.errors.push(`pageerror: ${err.message}`));
  try {
    const started = Date.now();
    await page.goto(config.url, { waitUntil: "domcontentloaded" });
    await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    report.lab_open_ms = Date.now() - started;
    const notebook = new Notebook(page);
    await notebook.waitKernel();
    await notebook.run(0); // %load_ext agent_kernel
    await notebook.waitIdle(0);
    if (config.scenario === "test") await testScenario(page, notebook);
    else if (config.scenario === "team") await teamScenario(page, notebook);
    else if (config.scenario === "latency") await latencyScenario(page, notebook);
    else if (config.scenario === "exact") await exactScenario(page, notebook);
    else if (config.scenario === "code") await codeScenario(page, notebook);
    else throw new Error(`unknown scenario ${config.scenario}`);
    report.news_popup = await page.getByText("official Jupyter news").count();
    await page.keyboard.press("Control+s"); // the saved file keeps the static transcripts
    await page.waitForTimeout(1500);
    await shot(page, "final-page", page);
    if (config.scenario === "test") await reopenScenario(page);
    if (config.scenario === "team") await reopenTeam(page);
  } catch (err) {
    report.errors.push(String(err && err.stack ? err.stack : err));
    await shot(page, "failure", page).catch(() => {});
  } finally {
    await context.close();
    console.log("REPORT " + JSON.stringify(report));
  }
}

async function shot(page, name, target) {
  const file = path.join(config.shots, `${String(report.shots.length + 1).padStart(2, "0")}-${name}.png`);
  await (target ?? page).screenshot({ path: file });
  report.shots.push(file);
  log("screenshot", file);
}

class Notebook {
  constructor(page) {
    this.page = page;
  }
  cell(index) {
    return this.page.locator(".jp-Notebook .jp-Cell").nth(index);
  }
  async waitKernel(timeout = STEP_TIMEOUT) {
    // The status bar reads "Python 3 (ipykernel) | Idle" once the kernel is up.
    await this.page.getByText(/\| Idle/).first().waitFor({ timeout });
  }
  async run(index) {
    const cell = this.cell(index);
    const before = await this.prompt(index);
    for (let attempt = 0; attempt < 3; attempt++) {
      await cell.scrollIntoViewIfNeeded();
      await cell.locator(".jp-InputArea-editor").click();
      await this.page.keyboard.press("Control+Enter");
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        const now = await this.prompt(index);
        if (now !== before || now === "[*]:") {
          log("ran cell", index);
          return;
        }
        await this.page.waitForTimeout(100);
      }
    }
    throw new Error(`cell ${index} would not start`);
  }
  async prompt(index) {
    return (await this.cell(index).locator(".jp-InputPrompt").first().innerText()).trim();
  }
  async waitIdle(index, timeout = STEP_TIMEOUT) {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      if (/\[\d+\]/.test(await this.prompt(index))) return;
      await this.page.waitForTimeout(100);
    }
    throw new Error(`cell ${index} did not finish within ${timeout} ms`);
  }
  async status(index) {
    // The run output's header: data-status is the saved form's status word.
    const label = this.cell(index).locator(".agent-kernel-status, .akl-status");
    return (await label.count()) ? ((await label.first().getAttribute("data-status")) ?? "") : "";
  }
  async waitStatus(index, words, timeout = STEP_TIMEOUT) {
    const deadline = Date.now() + timeout;
    let seen = "";
    while (Date.now() < deadline) {
      seen = await this.status(index);
      if (words.includes(seen)) return seen;
      await this.page.waitForTimeout(100);
    }
    throw new Error(`cell ${index}: status never became ${words.join("/")} (last: ${seen})`);
  }
  async text(index, selector) {
    const found = this.cell(index).locator(selector);
    return (await found.count()) ? (await found.first().innerText()).trim() : "";
  }
  // Every match's text, also inside closed <details> (textContent, not innerText).
  async allText(index, selector) {
    const found = await this.cell(index).locator(selector).allTextContents();
    return found.map((t) => t.trim()).join("\n");
  }
  async widgetOutputs(index) {
    return await this.cell(index)
      .locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.widget-view+json"]').count();
  }
  button(index, css, name) {
    return this.cell(index).locator(`button.${css}:not([disabled])`, { hasText: name }).first();
  }
}

// Click with a timestamp taken in the page right before the click event fires.
async function timedClick(button) {
  await button.scrollIntoViewIfNeeded();
  return await button.evaluate((el) => {
    const at = performance.timeOrigin + performance.now();
    el.click();
    return at;
  });
}

async function askAndClick(page, nb, index, choice, key) {
  await nb.run(index);
  const button = nb.button(index, "agent-kernel-option", choice);
  await button.waitFor({ timeout: STEP_TIMEOUT });
  const step = { prompt_while_asking: await nb.prompt(index) };
  await shot(page, `${key}-question`, nb.cell(index));
  step.clicked_at = await timedClick(button);
  step.status = await nb.waitStatus(index, ENDED);
  await nb.waitIdle(index);
  await nb.cell(index).locator(OUTCOME, { hasText: "You chose" }).first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
  step.reply = await nb.allText(index, ".agent-kernel-reply, .akl-text");
  step.answered = await nb.allText(index, ".agent-kernel-question .agent-kernel-answered, .akl-question .akl-outcome");
  step.outcome = await nb.allText(index, OUTCOME);
  step.buttons_left = await nb.cell(index).locator("button.agent-kernel-option").count();
  step.widget_outputs = await nb.widgetOutputs(index);
  step.stderr = await nb.text(index, '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
  await shot(page, `${key}-answered`, nb.cell(index));
  report.steps[key] = step;
  log(key, JSON.stringify(step));
}

async function testScenario(page, nb) {
  // 1: %agent (non-blocking) asks with options; click "tea".
  await askAndClick(page, nb, 1, "tea", "ask");
  // 2: %%agent --wait: the cell blocks ([*]) while the buttons wait; click "coffee".
  await askAndClick(page, nb, 2, "coffee", "ask_wait");
  // 3: free text: type a name and press Enter.
  {
    const index = 3;
    await nb.run(index);
    const box = nb.cell(index).locator(".agent-kernel-answer-text input");
    await box.waitFor({ timeout: STEP_TIMEOUT });
    await page.waitForFunction((el) => !el.disabled, await box.elementHandle());
    await box.fill("Ada Lovelace");
    report.text_contrast = EXT ? await page.evaluate(textContrast, ".akl-question") : [];
    await shot(page, "text-question", nb.cell(index));
    await box.press("Enter");
    const step = { status: await nb.waitStatus(index, ENDED) };
    await nb.cell(index).locator(OUTCOME, { hasText: "You answered" }).first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    step.reply = await nb.allText(index, ".agent-kernel-reply, .akl-text");
    step.answered = await nb.allText(index, ".agent-kernel-question .agent-kernel-answered, .akl-question .akl-outcome");
    step.outcome = await nb.allText(index, OUTCOME);
    await shot(page, "text-answered", nb.cell(index));
    report.steps.text = step;
  }
  // 4: an approval, clicked Deny.
  {
    const index = 4;
    await nb.run(index);
    const deny = nb.button(index, "agent-kernel-approval", "Deny");
    await deny.waitFor({ timeout: STEP_TIMEOUT });
    // Approve is on once the card shows exactly what will run (Deny works at once).
    await nb.button(index, "agent-kernel-approval", "Approve").waitFor({ timeout: STEP_TIMEOUT });
    // The run output is updated a moment after the buttons appear (at most 4 times a second).
    await nb.cell(index).locator(".agent-kernel-tool summary, .akl-tool-summary",
      { hasText: "waiting for your approval" }).first().waitFor({ timeout: 5000 }).catch(() => {});
    const step = {
      question: await nb.text(index, EXT ? ".akl-tool[data-state='waiting']" : ".agent-kernel-question"),
      approval_buttons: await nb.cell(index).locator("button.agent-kernel-approval").allInnerTexts(),
      primary: await nb.cell(index).locator(`button.agent-kernel-approval.${PRIMARY}`).allInnerTexts(),
      card_while_asking: await nb.allText(index, ".agent-kernel-tool summary, .akl-tool-summary"),
      approval_in_card: await nb.cell(index).locator(".akl-tool button.agent-kernel-approval").count(),
      countdown: await nb.text(index, ".akl-countdown, .agent-kernel-countdown"),
    };
    if (EXT) step.contrast = await page.evaluate(textContrast, ".akl-approval-live, .akl-header");
    // the HTML fallback's warning text (the waiting mark), measured while it shows
    else step.fallback_contrast = await page.evaluate(textContrast, `.jp-Cell:nth-child(${index + 1}) .agent-kernel-run`);
    step.dark = await page.evaluate(() => document.body.dataset.jpThemeLight === "false");
    await shot(page, "approval-question", nb.cell(index));
    await deny.click();
    step.status = await nb.waitStatus(index, ENDED);
    await nb.cell(index).locator(OUTCOME, { hasText: "Denied" }).first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    step.reply = await nb.allText(index, ".agent-kernel-reply, .akl-text");
    step.card = await nb.allText(index, ".agent-kernel-tool, .akl-tool");
    step.outcome = await nb.allText(index, OUTCOME);
    step.widget_outputs = await nb.widgetOutputs(index);
    if (!EXT) {  // and its status word "denied", a warning colour too
      step.fallback_contrast.push(...await page.evaluate(textContrast,
        `.jp-Cell:nth-child(${index + 1}) .agent-kernel-run`));
    }
    await shot(page, "approval-denied", nb.cell(index));
    report.steps.deny = step;
  }
  // 5: approve a slow command, then press Stop while it runs.
  {
    const index = 5;
    await nb.run(index);
    const approve = nb.button(index, "agent-kernel-approval", "Approve");
    await approve.waitFor({ timeout: STEP_TIMEOUT });
    await approve.click();
    await nb.cell(index).locator(OUTCOME, { hasText: "Approved" }).first()
      .waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    await page.waitForTimeout(1500); // `sleep 30` is running now
    const step = {
      running_status: await nb.status(index),
      running_tool: await nb.allText(index, ".agent-kernel-tool summary, .akl-tool-summary"),
      stop_buttons: await nb.cell(index).locator("button.agent-kernel-stop").count(),
    };
    await shot(page, "stop-running", nb.cell(index));
    const stopAt = Date.now();
    await nb.button(index, "agent-kernel-stop", "Stop").click();
    step.status = await nb.waitStatus(index, ENDED, 20_000);
    step.stop_to_stopped_ms = Date.now() - stopAt;
    if (!EXT) {
      await nb.cell(index).locator(".agent-kernel-outcome", { hasText: "Stopped" })
        .waitFor({ timeout: STEP_TIMEOUT });
    }
    step.outcome = await nb.allText(index, ".agent-kernel-outcome");
    step.stop_buttons_after = await nb.cell(index).locator("button.agent-kernel-stop").count();
    step.widget_outputs = await nb.widgetOutputs(index);
    await shot(page, "stop-stopped", nb.cell(index));
    report.steps.stop = step;
  }
  // 6: the conversation is still usable after Stop.
  {
    const index = 6;
    await nb.run(index);
    const step = { status: await nb.waitStatus(index, ENDED) };
    step.reply = await nb.allText(index, ".agent-kernel-reply, .akl-text");
    await shot(page, "after-stop", nb.cell(index));
    report.steps.after_stop = step;
  }
  // 7: the kernel's own record of the runs (ledger kinds), printed by the last cell.
  await nb.run(7);
  await nb.waitIdle(7);
  report.steps.ledger = await nb.text(7, ".jp-OutputArea-output");
  // 8-9: a trigger every 2 s (its panel in the run's cell), then %agent_triggers; the
  // panels are static tables updated in place; Cancel lives in the controls output.
  {
    await nb.run(8);
    const step = { status: await nb.waitStatus(8, ENDED) };
    await nb.run(9);
    await nb.waitIdle(9);
    const runs = async (index) => {
      const cell = await nb.text(index, ".agent-kernel-trigger-runs");
      return cell ? parseInt(cell, 10) : 0;
    };
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && (await runs(9)) < 2) await page.waitForTimeout(200);
    step.runs_live = await runs(9);
    step.card_runs_live = await runs(8);
    step.card_controls = await nb.allText(8, ".agent-kernel-outcome");
    step.cancel_buttons = await nb.cell(9).locator("button.agent-kernel-trigger-cancel").count();
    step.panel_widgets = await nb.cell(9).locator(".agent-kernel-triggers .jupyter-widgets").count();
    step.controls = await nb.allText(9, ".agent-kernel-outcome");
    await shot(page, "triggers-panel", nb.cell(9));
    if (EXT) {
      await nb.button(9, "agent-kernel-trigger-cancel", "Cancel").click();
    } else {  // no widget: the words name the magic, and the last cell runs it
      await nb.run(CANCEL_CELL);
      await nb.waitIdle(CANCEL_CELL);
      step.cancel_cell = await nb.allText(CANCEL_CELL, ".jp-OutputArea-output");
    }
    await nb.cell(9).locator(".agent-kernel-outcome", { hasText: "Cancelled" })
      .waitFor({ timeout: STEP_TIMEOUT });
    await nb.cell(9).locator(".agent-kernel-trigger-status[data-status='cancelled']")
      .waitFor({ timeout: STEP_TIMEOUT });
    step.outcome = await nb.allText(9, ".agent-kernel-outcome");
    step.panel = await nb.text(9, ".agent-kernel-triggers");
    step.widget_outputs = (await nb.widgetOutputs(8)) + (await nb.widgetOutputs(9));
    await shot(page, "triggers-cancelled", nb.cell(9));
    report.steps.triggers = step;
  }
  // 10-11: a memory, then the %agent_memory table.
  await nb.run(10);
  await nb.waitStatus(10, ENDED);
  await nb.run(11);
  await nb.waitIdle(11);
  report.steps.memory = { table: await nb.text(11, ".agent-kernel-memory") };
  await shot(page, "memory-table", nb.cell(11));
  // 12: a trigger left live when the notebook is saved.
  await nb.run(12);
  await nb.waitStatus(12, ENDED);
  if (EXT) {
    await nb.cell(12).locator("button.agent-kernel-trigger-cancel").waitFor({ timeout: STEP_TIMEOUT });
  } else {
    await nb.cell(12).locator(".agent-kernel-outcome", { hasText: "%agent_triggers cancel" })
      .waitFor({ timeout: STEP_TIMEOUT });
  }
  report.steps.live_trigger = {
    buttons: await nb.cell(12).locator("button.agent-kernel-trigger-cancel").count(),
    controls: await nb.allText(12, EXT ? ".akl-panel-controls" : ".agent-kernel-outcome"),
    widget_outputs: await nb.widgetOutputs(12),
    // the panels, the memory table and the panel's live controls (dark theme with ours)
    contrast: await page.evaluate(textContrast, EXT
      ? ".agent-kernel-triggers, .agent-kernel-memory, .akl-panel-controls"
      : ".agent-kernel-triggers, .agent-kernel-memory, .agent-kernel-outcome"),
  };
  await shot(page, "live-trigger", nb.cell(12));
}

// Save, shut the kernel down, reload: every run must read from the file alone.
async function reopenScenario(page) {
  const { nb, shutdown } = await shutDownAndReload(page);
  // Which renderer drew the runs: our extension (.akl-run) or the text/html fallback.
  const reopened = {
    kernels_shut_down: shutdown, runs: {},
    extension_runs: await page.locator(".akl-run").count(),
    html_runs: await page.locator(".agent-kernel-run").count(),
  };
  reopened.widget_errors = await page.getByText("Error displaying widget").count();
  reopened.widget_outputs = await page
    .locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.widget-view+json"]').count();
  for (const index of RUN_CELLS) {
    reopened.runs[index] = {
      status: await nb.status(index),
      text: await nb.allText(index, ".agent-kernel-run, .akl-run"),
      outcome: await nb.allText(index, `${OUTCOME}, .agent-kernel-outcome`),
    };
  }
  reopened.triggers = await nb.text(9, ".agent-kernel-triggers");
  reopened.trigger_outcome = await nb.allText(9, ".agent-kernel-outcome");
  reopened.memory = await nb.text(11, ".agent-kernel-memory");
  reopened.live_panel_controls = EXT ? await nb.text(12, ".akl-panel-controls")
    : await nb.allText(12, ".agent-kernel-outcome");
  reopened.live_panel_buttons = await nb.cell(12).locator(".jp-OutputArea button").count();
  await nb.cell(12).scrollIntoViewIfNeeded();
  await shot(page, "reopened-cell12", nb.cell(12));
  report.steps.reopened = reopened;
  for (const index of [1, 4, 5, 9, 11]) {
    await nb.cell(index).scrollIntoViewIfNeeded();
    await shot(page, `reopened-cell${index}`, nb.cell(index));
  }
  await shot(page, "reopened-page", page);
}

// The team on the demo model: a nested transcript, a Worker's approval in the Teller's
// output, the %agent_team board with Stop on the running Worker, then the saved file.
const BOARD = ".agent-kernel-team-board";
const TEAM_CONTROLS = ".akl-panel-controls, .agent-kernel-team-controls, .agent-kernel-outcome";

async function shutDownAndReload(page) {
  const url = new URL(config.url);
  const token = url.searchParams.get("token");
  const shutdown = await page.evaluate(async ({ origin, token }) => {
    const headers = { Authorization: `token ${token}` };
    const kernels = await (await fetch(`${origin}/api/kernels`, { headers })).json();
    for (const k of kernels) {
      await fetch(`${origin}/api/kernels/${k.id}`, { method: "DELETE", headers });
    }
    return kernels.length;
  }, { origin: url.origin, token });
  log("kernels shut down", shutdown);
  await page.waitForTimeout(1000);
  await page.reload({ waitUntil: "domcontentloaded" });
  const nb = new Notebook(page);
  await nb.cell(0).waitFor({ timeout: STEP_TIMEOUT });
  await page.locator(".agent-kernel-run, .akl-run").first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
  await page.waitForTimeout(1500);
  return { nb, shutdown };
}

async function teamScenario(page, nb) {
  await page.setViewportSize({ width: 1280, height: 2400 }); // a whole team run per screenshot
  const dark = await page.evaluate(() => document.body.dataset.jpThemeLight === "false");
  // 1: three cities researched by three Workers; each agent's run nested in the Teller's.
  {
    await nb.run(1);
    const step = { status: await nb.waitStatus(1, ENDED, 90_000), dark };
    await nb.waitIdle(1);
    const cell = nb.cell(1);
    step.agents = await cell.locator(".akl-agent").count();
    step.nested_workers = await cell.locator(".akl-agent .akl-agent").count();
    step.agent_titles = await cell.locator(".akl-agent-name").allTextContents();
    step.reply = await nb.allText(1, ".akl-run > .akl-text");
    step.all_text = await nb.allText(1, ".akl-run");
    step.tables = await cell.locator(".akl-run table").count();
    await page.evaluate(() => {  // every agent's run open for the screenshot and the measure
      document.querySelectorAll(".jp-Cell:nth-child(2) .akl-agent").forEach((d) => { d.open = true; });
    });
    await page.waitForTimeout(300);
    step.contrast = await page.evaluate(textContrast, ".jp-Cell:nth-child(2) .akl-run");
    await shot(page, "team-transcript", cell);
    report.steps.transcript = step;
  }
  // 2: a Worker's command needs approval: asked in the Teller's output, naming the Worker.
  {
    await nb.run(2);
    const approve = nb.button(2, "agent-kernel-approval", "Approve");
    await approve.waitFor({ timeout: STEP_TIMEOUT });
    await page.waitForTimeout(500);
    // inside the card of the Worker's call, in the Worker's own run, as a single agent's
    const card = ".akl-agent .akl-tool[data-state='waiting']";
    const step = {
      label: await nb.text(2, `${card} .akl-approval .akl-label`),
      question: await nb.text(2, card),
      top_level: await nb.cell(2).locator(".akl-run > .akl-question").count(),
      in_agent: await nb.cell(2).locator(`${card} .akl-approval-live`).count(),
      agent_name: await nb.text(2, ".akl-agent[data-state='running'] .akl-agent-name"),
      agent_title: await nb.cell(2).locator(".akl-agent[data-state='running'] .akl-agent-name")
        .last().getAttribute("title"),
      contrast: await page.evaluate(textContrast, `.jp-Cell:nth-child(3) ${card}`),
    };
    await shot(page, "team-approval", nb.cell(2));
    // 3: a trigger of the team's, made from Python; 4, while the Worker waits: the
    // board says so on the Worker's row.
    await nb.run(3);
    await nb.waitIdle(3);
    step.trigger = await nb.text(3, '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]');
    await nb.run(4);
    await nb.waitIdle(4);
    const waiting = nb.cell(4).locator(`${BOARD} .agent-kernel-team-waiting`);
    await waiting.first().waitFor({ timeout: STEP_TIMEOUT });
    step.board_waiting = await waiting.first().innerText();
    step.board_waiting_row = await nb.text(4, `${BOARD} tr[data-status='running']`);
    // the board's warning text ("waiting for your approval"), measured while it shows
    step.board_waiting_contrast = await page.evaluate(textContrast, `.jp-Cell:nth-child(5) ${BOARD}`);
    await shot(page, "team-board-waiting", nb.cell(4));
    await approve.click();
    await nb.cell(2).locator(OUTCOME, { hasText: "Approved" }).first()
      .waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    step.outcome = await nb.allText(2, OUTCOME);
    await waiting.first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => {});
    step.board_waiting_after = await waiting.count();
    report.steps.approval = step;
  }
  // The board while the Worker's `sleep 30` runs, and Stop on its row.
  {
    await page.waitForTimeout(1000);
    const stop = nb.button(4, "agent-kernel-team-stop", "Stop");
    await stop.waitFor({ timeout: STEP_TIMEOUT });
    const cell = nb.cell(4);
    const step = {
      board: await nb.text(4, BOARD),
      running_rows: await cell.locator(`${BOARD} tr[data-status='running']`).count(),
      agent_rows: await cell.locator(`${BOARD} tr.agent-kernel-team-agent`).count(),
      artifact_rows: await cell.locator(`${BOARD} tr.agent-kernel-team-artifact`).count(),
      role_rows: await cell.locator(`${BOARD} tr.agent-kernel-team-role`).count(),
      stop_buttons: await cell.locator("button.agent-kernel-team-stop").count(),
      cancel_buttons: await cell.locator("button.agent-kernel-team-cancel").count(),
      controls: await nb.allText(4, TEAM_CONTROLS),
      // each button in the row it acts on: inside the row's element and its box
      placement: await cell.evaluate((c) => {
        const inRow = (button, rowSelector) => {
          if (!button) return null;
          const row = button.closest(rowSelector);
          if (!row) return { in_row: false };
          const b = button.getBoundingClientRect();
          const r = row.getBoundingClientRect();
          return {
            in_row: row.contains(button),
            box_in_row: b.left >= r.left - 0.5 && b.right <= r.right + 0.5 &&
              b.top >= r.top - 0.5 && b.bottom <= r.bottom + 0.5,
            label: button.getAttribute("aria-label"),
            row_text: row.innerText,
          };
        };
        return {
          stop: inRow(c.querySelector("button.agent-kernel-team-stop"), "tr[data-status='running']"),
          cancel: inRow(c.querySelector("button.agent-kernel-team-cancel"), "tr.agent-kernel-team-trigger"),
          outputs: c.querySelectorAll(".jp-OutputArea-output").length,
        };
      }),
      contrast: await page.evaluate(textContrast, `.jp-Cell:nth-child(5) ${BOARD}`),
    };
    await shot(page, "team-board", cell);
    // Cancel on the trigger's row first: the board redraws (its Triggers section goes)
    // while the Stop of the running row stays the same node.
    await page.evaluate(() => { window.__akStop = document.querySelector("button.agent-kernel-team-stop"); });
    await nb.button(4, "agent-kernel-team-cancel", "Cancel").click();
    await cell.locator(TEAM_CONTROLS, { hasText: "Cancelled" }).first()
      .waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    await cell.locator(BOARD, { hasText: "Triggers" }).first()
      .waitFor({ state: "detached", timeout: 10_000 }).catch(() => {});
    step.outcome = await nb.allText(4, TEAM_CONTROLS);
    step.cancels_left = await cell.locator("button.agent-kernel-team-cancel").count();
    step.same_stop_node = await page.evaluate(() =>
      window.__akStop === document.querySelector("button.agent-kernel-team-stop"));
    await shot(page, "team-cancelled", cell);
    // Stop by keyboard: the button takes focus and Enter presses it.
    await stop.focus();
    step.stop_focused = await stop.evaluate((b) => document.activeElement === b);
    const stopAt = Date.now();
    await page.keyboard.press("Enter");
    await cell.locator(TEAM_CONTROLS, { hasText: "Stopped" }).first()
      .waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    step.run_status = await nb.waitStatus(2, ENDED, 30_000);
    step.stop_to_ended_ms = Date.now() - stopAt;
    await cell.locator(`${BOARD}`, { hasText: "Nothing is running" })
      .waitFor({ timeout: 10_000 }).catch(() => {});
    step.board_after = await nb.text(4, BOARD);
    step.board_end = step.board_after;
    step.stopped = await nb.allText(4, TEAM_CONTROLS);
    step.buttons_after = await cell.locator("button.agent-kernel-team-stop, button.agent-kernel-team-cancel").count();
    await shot(page, "team-stopped", cell);
    step.reply = await nb.allText(2, ".akl-run");
    step.elapsed = await nb.text(2, ".akl-run > .akl-header .akl-elapsed");
    await shot(page, "team-stopped-run", nb.cell(2));
    report.steps.board = step;
  }
  // 5: the team's ledger holds.
  await nb.run(5);
  await nb.waitIdle(5);
  report.steps.ledger = await nb.text(5, ".jp-OutputArea-output");
  // 6: a board as saved while its Worker ran (read after the reload, with no kernel).
  await nb.run(6);
  await nb.waitIdle(6);
  await nb.cell(6).locator(`${BOARD} tr[data-status='running']`).first()
    .waitFor({ timeout: STEP_TIMEOUT });
}

async function reopenTeam(page) {
  const { nb, shutdown } = await shutDownAndReload(page);
  const reopened = {
    kernels_shut_down: shutdown,
    agents: await nb.cell(1).locator(".akl-agent").count(),
    transcript: await nb.allText(1, ".akl-run"),
    approval: await nb.allText(2, ".akl-run"),
    board: await nb.text(4, BOARD),
    controls: await nb.allText(4, TEAM_CONTROLS),
    buttons: await page.locator("button.agent-kernel-team-stop, button.agent-kernel-team-cancel").count(),
    widget_errors: await page.getByText("Error displaying widget").count(),
    saved_live_row: await nb.text(6, `${BOARD} tr[data-status='running']`),
    saved_live_buttons: await nb.cell(6).locator("button").count(),
  };
  for (const index of [1, 2, 4, 6]) {
    await nb.cell(index).scrollIntoViewIfNeeded();
    await shot(page, `reopened-team-cell${index}`, nb.cell(index));
  }
  report.steps.reopened = reopened;
}

async function latencyScenario(page, nb) {
  await nb.run(1); // subscribe to QuestionAnswered in the kernel
  await nb.waitIdle(1);
  const clicks = [];
  const rounds = config.rounds ?? 10;
  // The floor (benchmarks/click_latency.py): a bare ipywidgets button whose handler only
  // notes the time, clicked once before each question, with the kernel idle.
  const first = config.floor_cell ? config.floor_cell + 1 : 2;
  let floor = null;
  report.floor_clicks = [];
  if (config.floor_cell) {
    await nb.run(config.floor_cell);
    await nb.waitIdle(config.floor_cell);
    floor = nb.button(config.floor_cell, "bench-floor", "floor");
    await floor.waitFor({ timeout: STEP_TIMEOUT });
  }
  for (let i = 0; i < rounds; i++) {
    const index = first + i;
    if (floor) {
      await page.waitForTimeout(200);
      report.floor_clicks.push(await timedClick(floor));
    }
    await nb.run(index);
    const button = nb.button(index, "agent-kernel-option", "tea");
    await button.waitFor({ timeout: STEP_TIMEOUT });
    await page.waitForTimeout(200);
    clicks.push({ cell: index, mode: i % 2 ? "wait" : "background", clicked_at: await timedClick(button) });
    await nb.waitStatus(index, ENDED);
    await nb.waitIdle(index);
  }
  const last = first + rounds;
  await nb.run(last);
  await nb.waitIdle(last);
  report.clicks = clicks;
  report.kernel = await nb.text(last, ".jp-OutputArea-output");
  await shot(page, "latency-last", nb.cell(last - 1));
}

main();

// An approval whose command redaction would change: the live card shows it exactly,
// its secret-looking part marked; a save while it waits keeps only the redacted form.
async function exactScenario(page, nb) {
  const index = 1;
  const step = { dark: await page.evaluate(() => document.body.dataset.jpThemeLight === "false") };
  await nb.run(index);
  const deny = nb.button(index, "agent-kernel-approval", "Deny");
  await deny.waitFor({ timeout: STEP_TIMEOUT });
  const exact = EXT ? ".akl-exact-args" : ".ak-exact";
  await nb.cell(index).locator(exact).first().waitFor({ timeout: STEP_TIMEOUT });
  // Approve is on only once the exact arguments are drawn.
  await nb.button(index, "agent-kernel-approval", "Approve").waitFor({ timeout: STEP_TIMEOUT });
  step.exact = await nb.text(index, exact);
  step.secret_marks = await nb.cell(index).locator(EXT ? "mark.akl-secret" : "mark.ak-secret").allInnerTexts();
  step.invisible = await nb.cell(index).locator(EXT ? ".akl-invisible" : ".ak-invisible").allInnerTexts();
  step.card = await nb.allText(index, EXT ? ".akl-run" : ".jp-OutputArea");
  if (EXT) step.contrast = await page.evaluate(textContrast, ".akl-exact");
  await shot(page, `exact-waiting-${step.dark ? "dark" : "light"}`, nb.cell(index));
  // Save while the approval waits, and read the file the server saved.
  await page.keyboard.press("Control+s");
  await page.waitForTimeout(1500);
  const url = new URL(config.url);
  const name = decodeURIComponent(url.pathname.split("/").pop());
  const saved = await page.request.get(
    `${url.origin}/api/contents/${encodeURIComponent(name)}?content=1&type=notebook&token=${url.searchParams.get("token")}`);
  step.saved_while_waiting = await saved.text();
  await deny.click();
  step.status = await nb.waitStatus(index, ENDED);
  await nb.cell(index).locator(OUTCOME, { hasText: "Denied" }).first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
  step.card_after = await nb.allText(index, EXT ? ".akl-run" : ".jp-OutputArea");
  await shot(page, `exact-denied-${step.dark ? "dark" : "light"}`, nb.cell(index));
  report.steps.exact = step;
}

// run_python waits for approval: the live card shows its code highlighted as Python,
// character for character, with a secret-looking part still marked. Denied: nothing runs.
async function codeScenario(page, nb) {
  const index = 1;
  const step = { dark: await page.evaluate(() => document.body.dataset.jpThemeLight === "false") };
  await nb.run(index);
  const deny = nb.button(index, "agent-kernel-approval", "Deny");
  await deny.waitFor({ timeout: STEP_TIMEOUT });
  const code = ".akl-exact-args pre.akl-py";
  await nb.cell(index).locator(code).first().waitFor({ timeout: STEP_TIMEOUT });
  await nb.button(index, "agent-kernel-approval", "Approve").waitFor({ timeout: STEP_TIMEOUT });
  step.code = await page.evaluate(
    (selector) => document.querySelector(selector)?.textContent ?? "", code);
  const classed = async (name) => nb.cell(index).locator(`${code} .akl-py-${name}`).allInnerTexts();
  step.keywords = await classed("keyword");
  step.strings = await classed("string");
  step.comments = await classed("comment");
  step.secret_marks = await nb.cell(index).locator(`${code} mark.akl-secret`).allInnerTexts();
  step.contrast = await page.evaluate(textContrast, ".akl-exact");
  await shot(page, `code-waiting-${step.dark ? "dark" : "light"}`, nb.cell(index));
  await deny.click();
  step.status = await nb.waitStatus(index, ENDED);
  report.steps.code = step;
  // Approved code that sleeps holds the kernel's main thread: Stop still ends it.
  const slow = 2;
  await nb.run(slow);
  const approve = nb.button(slow, "agent-kernel-approval", "Approve");
  await approve.waitFor({ timeout: STEP_TIMEOUT });
  await approve.click();
  await nb.cell(slow).locator(OUTCOME, { hasText: "Approved" }).first()
    .waitFor({ state: "attached", timeout: STEP_TIMEOUT });
  await page.waitForTimeout(1500); // the code sleeps now
  const stop = { running_status: await nb.status(slow) };
  const stopAt = Date.now();
  await nb.button(slow, "agent-kernel-stop", "Stop").click();
  stop.status = await nb.waitStatus(slow, ENDED, 20_000);
  stop.stop_to_stopped_ms = Date.now() - stopAt;
  await shot(page, `code-stopped-${step.dark ? "dark" : "light"}`, nb.cell(slow));
  await nb.run(slow + 1);
  await nb.waitIdle(slow + 1);
  stop.after = await nb.text(slow + 1, ".jp-OutputArea-output");
  report.steps.code_stop = stop;
}
