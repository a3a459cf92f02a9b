// The agent works in the notebook's cells, in JupyterLab in Debian's Chromium
// (playwright-core): test_cells_lab.py. The model is a scripted server; in cell 1
// `%agent` inserts a cell below itself and a Markdown cell below itself too (the first
// moves from 2 to 3), runs the first by its id (Approve clicked: the card shows its
// source), edits it by its id (Approve clicked: the card gets the diff) and reads the cells.
// The notebook is saved, its kernel shut down and the page reloaded: the marker must
// come back from the saved metadata.
//
// Usage: node cells.mjs '<json config>'; config = {url, shots, chromium, profile}.
// Prints progress lines and, last, "REPORT <json>". With `bench` (benchmarks/cells.py)
// it only runs cells 0 and 1 and keeps the page open until the file `bench` names exists.
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";
import { textContrast } from "./contrast.mjs";

const config = JSON.parse(process.argv[2]);
const report = { steps: {}, errors: [], shots: [] };
const STEP_TIMEOUT = 90_000;
const ENDED = ["done", "done_with_failures", "denied", "stopped", "failed", "limit"];
const MARK = ".akl-agent-mark";

function log(...parts) {
  console.log(new Date().toISOString(), ...parts);
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
  async count() {
    return await this.page.locator(".jp-Notebook .jp-Cell").count();
  }
  async waitCount(n, timeout = STEP_TIMEOUT) {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      if ((await this.count()) === n) return;
      await this.page.waitForTimeout(100);
    }
    throw new Error(`the notebook never had ${n} cells (it has ${await this.count()})`);
  }
  async prompt(index) {
    return (await this.cell(index).locator(".jp-InputPrompt").first().innerText()).trim();
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
        if (now !== before || now === "[*]:") return;
        await this.page.waitForTimeout(100);
      }
    }
    throw new Error(`cell ${index} would not start`);
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
    const label = this.cell(index).locator(".akl-status");
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
  async allText(index, selector) {
    return (await this.cell(index).locator(selector).allTextContents()).map((t) => t.trim()).join("\n");
  }
  approve(index) {
    return this.cell(index).locator("button.agent-kernel-approval:not([disabled])", { hasText: "Approve" }).first();
  }
}

// One approval in cell 1's run: what the card says while it waits, then Approve clicked.
async function approveIn(page, nb, key, outcomes) {
  const approve = nb.approve(1);
  await approve.waitFor({ timeout: STEP_TIMEOUT });
  await nb.cell(1).locator(".akl-tool[data-state='waiting']").first().waitFor({ timeout: STEP_TIMEOUT });
  const step = {
    card: await nb.allText(1, ".akl-tool[data-state='waiting']"),
    contrast: await page.evaluate(textContrast, ".akl-tool[data-state='waiting']"),
  };
  await shot(page, `${key}-approval`, nb.cell(1));
  step.clicked_at = Date.now();
  await approve.click();
  await nb.cell(1).locator(".akl-outcome", { hasText: "Approved" }).nth(outcomes)
    .waitFor({ state: "attached", timeout: STEP_TIMEOUT });
  report.steps[key] = step;
  log(key, "approved");
}

async function main() {
  fs.rmSync(config.profile, { recursive: true, force: true });
  const context = await chromium.launchPersistentContext(config.profile, {
    executablePath: config.chromium,
    headless: true,
    viewport: { width: 1280, height: 1600 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (err) => report.errors.push(`pageerror: ${err.message}`));
  try {
    await page.goto(config.url, { waitUntil: "domcontentloaded" });
    await page.locator(".jp-Notebook .jp-Cell").first().waitFor({ state: "attached", timeout: STEP_TIMEOUT });
    const nb = new Notebook(page);
    await page.getByText(/\| Idle/).first().waitFor({ timeout: STEP_TIMEOUT });
    report.dark = await page.evaluate(() => document.body.dataset.jpThemeLight === "false");
    await nb.run(0); // %load_ext agent_kernel, pointed at the scripted server
    await nb.waitIdle(0);
    if (config.bench) {
      await nb.run(1); // starts the benchmark in the kernel's loop; the page answers it
      const deadline = Date.now() + 300_000;
      while (!fs.existsSync(config.bench) && Date.now() < deadline) await page.waitForTimeout(200);
      return;
    }
    report.cells_before = await nb.count();
    await nb.run(1); // %agent: insert, insert, run, edit, read
    // Both inserted cells appear below the agent's cell, marked, before anything runs: the
    // Markdown cell at 2, the plot's cell moved to 3.
    await nb.waitCount(5);
    await nb.cell(3).locator(MARK).waitFor({ timeout: STEP_TIMEOUT });
    await nb.cell(2).locator(MARK).waitFor({ timeout: STEP_TIMEOUT });
    report.steps.inserted = {
      cells: await nb.count(),
      source: await nb.cell(3).locator(".jp-InputArea-editor").innerText(),
      note: await nb.cell(2).locator(".jp-MarkdownOutput, .jp-InputArea-editor")
        .filter({ hasText: "squares" }).first().textContent({ timeout: STEP_TIMEOUT }).catch(() => ""),
      mark: await nb.allText(3, MARK),
      marked_cells: await page.locator(".jp-Cell.akl-agent-cell").count(),
      contrast: await page.evaluate(textContrast, MARK),
    };
    await approveIn(page, nb, "run", 0);
    // The cell ran in the notebook: its output is there, with its execution count.
    await nb.waitIdle(3);
    const image = nb.cell(3).locator(".jp-OutputArea-output img");
    const text = nb.cell(3).locator(".jp-OutputArea-output");
    await text.first().waitFor({ timeout: STEP_TIMEOUT });
    report.steps.ran = {
      prompt: await nb.prompt(3),
      images: await image.count(),
      output: (await text.allInnerTexts()).join("\n"),
      bold: await nb.cell(3).locator(".jp-OutputArea-output b", { hasText: "squares" }).count(),
      script_ran: await page.evaluate(() => window.aklScriptRan === true),
    };
    await nb.cell(3).scrollIntoViewIfNeeded();
    await shot(page, "ran-cell", nb.cell(3));
    await approveIn(page, nb, "edit", 1);
    report.steps.run_status = await nb.waitStatus(1, ENDED);
    report.steps.edited = {
      source: await nb.cell(3).locator(".jp-InputArea-editor").innerText(),
      mark: await nb.allText(3, MARK),
      tools: await nb.allText(1, ".akl-tool-summary"),
      reply: await nb.allText(1, ".akl-text"),
      // what the person sees of the run (folded details are not drawn), and what is folded
      visible: (await nb.cell(1).locator(".jp-OutputArea-output").allInnerTexts()).join("\n"),
      folded_ids: await nb.allText(1, ".akl-handles"),
    };
    await nb.cell(1).scrollIntoViewIfNeeded();
    await shot(page, "run-transcript", nb.cell(1));
    await nb.cell(3).scrollIntoViewIfNeeded();
    await shot(page, "edited-cell", nb.cell(3));
    await nb.run(4); // the ledger, from the kernel
    await nb.waitIdle(4);
    report.steps.ledger = await nb.allText(4, ".jp-OutputArea-output");
    await page.keyboard.press("Control+s");
    await page.waitForTimeout(1500);
    // Reopen with no kernel: the marker comes back from the saved metadata.
    const url = new URL(config.url);
    const token = url.searchParams.get("token");
    report.kernels_shut_down = await page.evaluate(async ({ origin, token }) => {
      const headers = { Authorization: `token ${token}` };
      const kernels = await (await fetch(`${origin}/api/kernels`, { headers })).json();
      for (const k of kernels) await fetch(`${origin}/api/kernels/${k.id}`, { method: "DELETE", headers });
      return kernels.length;
    }, { origin: url.origin, token });
    await page.waitForTimeout(1000);
    await page.reload({ waitUntil: "domcontentloaded" });
    const again = new Notebook(page);
    await again.cell(3).locator(MARK).waitFor({ timeout: STEP_TIMEOUT });
    report.steps.reopened = {
      cells: await again.count(),
      mark: await again.allText(3, MARK),
      marked_cells: await page.locator(".jp-Cell.akl-agent-cell").count(),
      images: await again.cell(3).locator(".jp-OutputArea-output img").count(),
      contrast: await page.evaluate(textContrast, MARK),
    };
    await again.cell(3).scrollIntoViewIfNeeded();
    await shot(page, "reopened-cell", again.cell(3));
  } catch (err) {
    report.errors.push(String(err && err.stack ? err.stack : err));
    await shot(page, "failure", page).catch(() => {});
  } finally {
    await context.close();
    console.log("REPORT " + JSON.stringify(report));
  }
}

main();
