// The extension in a real editor: code-server 4.100.3 (VS Code 1.100.3 in the browser) driven
// by headless Chromium through playwright-core. `npm run test:e2e` at the repository root.
//
// It installs the .vsix that `npm run package` builds, points `holefill.model` at a tiny random
// model (built by tests/conftest.py), then, like a user:
//   1. opens complete.py, deletes the end of a line, triggers an inline suggestion
//      (editor.action.inlineSuggest.trigger), waits for the ghost text, accepts it with Tab,
//      saves, and checks with `holefill check` that the file is still completable;
//   2. opens holes.py (three spans replaced by the hole marker), runs "holefill: Fill holes",
//      saves, and checks with Python's ast.parse that the file on disk is a valid program and
//      that only the holes changed;
//   3. opens cursors.py (two unfinished lines), puts a cursor at the end of each, runs Fill
//      holes (the server command with both positions) and checks the saved file the same way;
//   4. opens two_holes.py (top-level functions, two markers), starts Fill holes and types a
//      character while it runs (the fill stops and says so), undoes it, runs Fill holes again
//      to its end, and checks that every top-level function is still a function (ast) and that
//      the holefill output has no traceback ("Future exception was never retrieved" included);
//   5. points holefill.pythonPath at a Python without holefill (workspace settings) and checks
//      the error message gives the pip command; removing the setting brings the server back.
// Screenshots: the suggestion, the status bar with its tooltip, Fill holes, the install message.
//
// What it needs besides the repository: node 20 (code-server 4.100.3 runs on nothing newer),
// Chromium (`apt-get install -y chromium`), python3 ($HOLEFILL_PYTHON chooses another) with
// holefill, its model extra and pytest (the tiny model is built by tests/conftest.py), and for
// the first run the npm registry plus a C/C++ toolchain, libkrb5-dev and ripgrep
// (`apt-get install -y build-essential libkrb5-dev ripgrep`: code-server builds native modules). code-server is installed into a cache outside the repository
// ($HOLEFILL_E2E_CACHE, default ~/.cache/holefill-vscode-e2e) so that neither the .vsix
// nor the workspace install ever sees its 300 MB.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLIENT = path.resolve(HERE, '..');
const REPO = path.resolve(CLIENT, '..');
// Screenshots go to vscode-client/out/screenshots, so that a test run leaves the repository
// clean; HOLEFILL_E2E_SCREENSHOTS=docs/vscode refreshes the ones in the documentation.
const SHOTS = path.resolve(REPO, process.env.HOLEFILL_E2E_SCREENSHOTS
  ?? path.join(CLIENT, 'out', 'screenshots'));
const MARKER = '<|hole|>';
const T0 = Date.now();
const TIMEOUT_MS = Number(process.env.HOLEFILL_E2E_TIMEOUT_S ?? 600) * 1000;

/** @param {string} text */
function step(text) {
  console.log(`[e2e ${((Date.now() - T0) / 1000).toFixed(1).padStart(6)} s] ${text}`);
}

/** @param {string} text @returns {never} */
function fail(text) {
  throw new Error(text);
}

// ------------------------------------------------------------------------------ prerequisites

function checkNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major !== 20) {
    fail(`code-server 4.100.3 runs on node 20 only; this is node ${process.versions.node}`);
  }
}

function findChromium() {
  const candidates = [process.env.CHROMIUM_PATH, 'chromium', 'chromium-browser',
    'chromium-headless-shell', 'google-chrome'];
  for (const c of candidates) {
    if (!c) {
      continue;
    }
    const found = path.isAbsolute(c) ? (fs.existsSync(c) ? c : '')
      : spawnSync('sh', ['-c', `command -v ${c}`], { encoding: 'utf8' }).stdout.trim();
    if (found) {
      return found;
    }
  }
  return fail('no Chromium found: apt-get install -y chromium (or set CHROMIUM_PATH)');
}

/** The interpreter with holefill and torch; its real path goes into the settings. */
function findPython() {
  const python = process.env.HOLEFILL_PYTHON ?? 'python3';
  const res = spawnSync(python, ['-c', [
    'import sys, holefill, torch, transformers, pytest',
    'print(sys.executable)',
  ].join('\n')], { encoding: 'utf8', cwd: os.tmpdir() });
  if (res.status !== 0) {
    // pytest: the tiny model is built by tests/conftest.py, which imports it
    fail(`${python} cannot import holefill with its model extra and pytest: `
      + `${(res.stderr || String(res.error)).trim().split('\n').pop()}\n`
      + `  install them: ${python} -m pip install -e '${REPO}[model,test]' `
      + '(or set HOLEFILL_PYTHON to an interpreter that has them)');
  }
  return res.stdout.trim();
}

// ------------------------------------------------------------------------------ code-server

function cacheRoot() {
  return process.env.HOLEFILL_E2E_CACHE
    ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
      'holefill-vscode-e2e');
}

/**
 * `npm ci` of e2e/package.json into the cache, once per lockfile. What code-server's install
 * needs here, learned the hard way:
 * - its postinstall refuses to run as root unless npm_config_unsafe_perm=true (npm 11 no longer
 *   knows the option, but the script only reads the variable);
 * - it runs `npm install` in lib/vscode, where node-pty's postinstall runs `npx node-gyp`: npx
 *   must not ask (npm_config_yes=true);
 * - kerberos builds from source: libkrb5-dev;
 * - @vscode/ripgrep downloads rg from GitHub; without GitHub, its download cache is seeded with
 *   the system's rg (apt-get install -y ripgrep), which it then unpacks as if downloaded.
 */
function installTools() {
  const lock = fs.readFileSync(path.join(HERE, 'package-lock.json'));
  const manifest = fs.readFileSync(path.join(HERE, 'package.json'));
  const key = createHash('sha256').update(manifest).update(lock).digest('hex').slice(0, 12);
  const dir = path.join(cacheRoot(), key);
  const done = path.join(dir, '.installed');
  if (fs.existsSync(done)) {
    step(`code-server and playwright-core from the cache: ${dir}`);
    return dir;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(HERE, 'package.json'), path.join(dir, 'package.json'));
  fs.copyFileSync(path.join(HERE, 'package-lock.json'), path.join(dir, 'package-lock.json'));
  seedRipgrep();
  step(`installing code-server 4.100.3 and playwright-core into ${dir} (native builds: minutes)`);
  const t = Date.now();
  const res = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--foreground-scripts'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, npm_config_unsafe_perm: 'true', npm_config_yes: 'true' },
    maxBuffer: 256 * 1024 * 1024,
  });
  fs.writeFileSync(path.join(dir, 'install.log'), `${res.stdout}\n${res.stderr}`);
  if (res.status !== 0) {
    fail(`npm ci of code-server failed (log: ${path.join(dir, 'install.log')}):\n`
      + `${(res.stdout + res.stderr).split('\n').filter((l) => /error|ERR!/i.test(l))
        .slice(-15).join('\n')}`);
  }
  fs.writeFileSync(done, `${new Date().toISOString()} ${((Date.now() - t) / 1000).toFixed(0)} s\n`);
  step(`installed in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  return dir;
}

// The ripgrep that code-server 4.100.3's VS Code pins (@vscode/ripgrep 1.15.11).
const RIPGREP_CACHE = path.join(os.tmpdir(), 'vscode-ripgrep-cache-1.15.11');
const RIPGREP_ASSET = 'ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz';

function seedRipgrep() {
  const target = path.join(RIPGREP_CACHE, RIPGREP_ASSET);
  if (fs.existsSync(target) || process.platform !== 'linux' || process.arch !== 'x64') {
    return;
  }
  const rg = spawnSync('sh', ['-c', 'command -v rg'], { encoding: 'utf8' }).stdout.trim();
  if (!rg) {
    step('no system rg to seed @vscode/ripgrep with; its install downloads from GitHub');
    return;
  }
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-stage-'));
  fs.copyFileSync(rg, path.join(stage, 'rg'));
  fs.chmodSync(path.join(stage, 'rg'), 0o755);
  fs.mkdirSync(RIPGREP_CACHE, { recursive: true });
  execFileSync('tar', ['czf', target, '-C', stage, 'rg']);
  fs.rmSync(stage, { recursive: true, force: true });
  step(`seeded the ripgrep download cache with ${rg}`);
}

// ------------------------------------------------------------------------------ the pieces

function buildVsix() {
  step('npm run package (typecheck, bundle, vsce)');
  const res = spawnSync('npm', ['run', 'package'], { cwd: CLIENT, encoding: 'utf8' });
  if (res.status !== 0) {
    fail(`npm run package failed:\n${res.stdout}\n${res.stderr}`);
  }
  const vsix = path.join(CLIENT, 'holefill-0.1.0.vsix');
  if (!fs.existsSync(vsix)) {
    fail(`npm run package made no ${vsix}`);
  }
  return vsix;
}

/** @param {string} python @param {string} cache */
function buildTinyModel(python, cache) {
  const dir = path.join(cache, 'tiny-model');
  if (fs.existsSync(path.join(dir, 'model.safetensors'))) {
    return dir;
  }
  step('building the tiny random model (tests/conftest.py)');
  execFileSync(python, ['-c', [
    'import sys',
    "sys.path.insert(0, 'tests')",
    'from pathlib import Path',
    'from conftest import build_tiny_model',
    'build_tiny_model(Path(sys.argv[1]))',
  ].join('\n'), dir], { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

const COMPLETE_PY = `def area(width, height):
    return width * height


def perimeter(width, height):
    return 2 * (width + height)
`;
// Line 6 keeps "    return 2 * (width + " (24 characters): the rest is deleted in the editor.
const COMPLETE_LINE = 6;
const COMPLETE_KEEP = '    return 2 * (width + ';

const HOLES_PY = `import math


def norm(x, y):
    return math.sqrt(x * x + ${MARKER})


def scale(values, k):
    return [${MARKER} for v in values]


def mean(values):
    total = ${MARKER}
    return total / len(values)
`;

// Issue 13's scenario: a Fill holes must never turn the user's functions into string content.
const TWO_HOLES_PY = `def wrap(text, width=70):
    words = text.split()
    lines, line = [], ""
    for w in words:
        if len(line) + len(w) + 1 > width:
            lines.append(line)
            line = ${MARKER}
        else:
            line = (line + " " + w).strip()
    return lines + [line]


def dedent(text):
    margin = ${MARKER}
    return text


def indent(text, prefix):
    return "".join(prefix + line for line in text.splitlines(True))
`;
const TWO_HOLES_FUNCTIONS = ['wrap', 'dedent', 'indent'];

// Two unfinished lines of the same length: one cursor at the end of the first, one added below.
const CURSORS_PY = `def combine(a, b):
    x = a +
    y = b *
    return x, y
`;
const CURSORS_LINE = 2;
const CURSORS_COLUMN = '    x = a +'.length + 1;

/** @param {string} s */
function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ------------------------------------------------------------------------------ the run

async function main() {
  checkNode();
  fs.mkdirSync(SHOTS, { recursive: true });
  const chromiumPath = findChromium();
  const python = findPython();
  step(`node ${process.versions.node}, ${chromiumPath}, ${python}`);
  const tools = installTools();
  const vsix = buildVsix();
  const model = buildTinyModel(python, cacheRoot());

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'holefill-e2e-'));
  const ws = path.join(work, 'workspace');
  const userData = path.join(work, 'user-data');
  const extensions = path.join(work, 'extensions');
  for (const d of [ws, path.join(userData, 'User'), extensions]) {
    fs.mkdirSync(d, { recursive: true });
  }
  fs.writeFileSync(path.join(ws, 'complete.py'), COMPLETE_PY);
  fs.writeFileSync(path.join(ws, 'holes.py'), HOLES_PY);
  fs.writeFileSync(path.join(ws, 'cursors.py'), CURSORS_PY);
  fs.writeFileSync(path.join(ws, 'two_holes.py'), TWO_HOLES_PY);
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
    'holefill.pythonPath': python,
    'holefill.model': model,
    'holefill.device': 'cpu',
    'holefill.maxNewTokens': 24,
    'holefill.debounceMs': 0,
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'extensions.ignoreRecommendations': true,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'files.autoSave': 'off',
    'editor.minimap.enabled': false,
  }, null, 2));

  const codeServer = path.join(tools, 'node_modules', '.bin', 'code-server');
  // code-server writes its config and state under XDG folders: keep them in the scratch folder.
  const env = { ...process.env, XDG_CONFIG_HOME: path.join(work, 'config'),
    XDG_DATA_HOME: path.join(work, 'data') };
  const common = ['--user-data-dir', userData, '--extensions-dir', extensions];
  step(`code-server --install-extension ${path.basename(vsix)}`);
  execFileSync(codeServer, [...common, '--install-extension', vsix], { env, stdio: 'pipe' });

  const port = await freePort();
  const log = fs.openSync(path.join(work, 'code-server.log'), 'w');
  const server = spawn(codeServer, [...common, '--auth', 'none', '--bind-addr',
    `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check',
  '--disable-workspace-trust', '--disable-getting-started-override', '--ignore-last-opened',
    ws], { env, stdio: ['ignore', log, log], detached: true });
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`;

  const { chromium } = await import(pathToFileURL(path.join(tools, 'node_modules',
    'playwright-core', 'index.mjs')).href);
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  /** @type {import('playwright-core').Page | undefined} */
  let page;
  const timer = setTimeout(() => {
    console.error(`e2e: no result after ${TIMEOUT_MS / 1000} s`);
    process.exitCode = 1;
    void browser?.close();
  }, TIMEOUT_MS);
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
    step(`code-server ${port} up; launching Chromium`);
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
    page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
    await drive(page, url, ws, python, userData);
  } catch (err) {
    if (page) {
      await page.screenshot({ path: path.join(work, 'failure.png') }).catch(() => undefined);
    }
    console.error(diagnostics(work, userData));
    throw err;
  } finally {
    clearTimeout(timer);
    await browser?.close().catch(() => undefined);
    if (server.pid !== undefined) {
      try {
        process.kill(-server.pid, 'SIGTERM'); // its group: code-server, the extension host, Python
      } catch {
        // already gone
      }
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
  step('passed');
}

/** @param {string} url @param {number} ms */
async function waitForHttp(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const res = await fetch(url);
      if (res.ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  fail(`code-server did not answer at ${url} within ${ms / 1000} s`);
}

/** What to read when it fails: code-server's log and the holefill output channel. */
function diagnostics(/** @type {string} */ work, /** @type {string} */ userData) {
  const parts = [`scratch folder kept: ${work}`];
  const tail = (/** @type {string} */ f) =>
    fs.readFileSync(f, 'utf8').split('\n').slice(-40).join('\n');
  parts.push(`--- code-server.log\n${tail(path.join(work, 'code-server.log'))}`);
  const logs = path.join(userData, 'logs');
  const walk = (/** @type {string} */ d) => fs.existsSync(d)
    ? fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => e.isDirectory()
      ? walk(path.join(d, e.name)) : [path.join(d, e.name)])
    : [];
  for (const f of walk(logs).filter((f) => /holefill|exthost\.log$/.test(f))) {
    parts.push(`--- ${path.relative(userData, f)}\n${tail(f)}`);
  }
  return parts.join('\n');
}

/**
 * @param {import('playwright-core').Page} page
 * @param {string} url @param {string} ws @param {string} python @param {string} userData
 */
async function drive(page, url, ws, python, userData) {
  await page.goto(url);
  await page.waitForSelector('.monaco-workbench .part.statusbar', { timeout: 90_000 });
  step('workbench loaded');

  // ---------------------------------------------------------------- inline suggestion
  await openFile(page, 'complete.py');
  const item = page.locator('.statusbar-item', { hasText: 'holefill' }).first();
  await item.waitFor({ timeout: 60_000 });
  await waitFor(async () => (await item.locator('.codicon-check').count()) > 0, 120_000,
    async () => `the status bar never said ready: "${await item.innerText()}"`);
  step(`status bar: "${(await item.innerText()).trim()}"`);

  // Delete the end of line 6, as a user would, leaving `return 2 * (width + `.
  await gotoLine(page, COMPLETE_LINE, COMPLETE_KEEP.length + 1);
  await page.keyboard.press('Shift+End');
  await page.keyboard.press('Delete');
  await runCommand(page, 'Trigger Inline Suggestion');
  const ghost = page.locator('.monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text');
  await ghost.first().waitFor({ state: 'visible', timeout: 120_000 });
  // One line of ghost text is several spans (one per token colour): join them.
  const shown = (await ghost.allInnerTexts()).join('').replace(/\u00a0/g, ' ');
  step(`ghost text: ${JSON.stringify(shown)}`);
  if (!shown.trim()) {
    fail('the ghost text is empty');
  }
  await waitFor(async () => /\d+ ms/.test(await item.innerText()), 30_000,
    async () => `no latency in the status bar: "${await item.innerText()}"`);
  await page.screenshot({ path: path.join(SHOTS, 'inline-suggestion.png') });

  // The status bar with its tooltip (interpreter, model, last latency).
  await item.hover();
  const hover = page.locator('.monaco-hover, .workbench-hover').first();
  await hover.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => undefined);
  const vp = page.viewportSize() ?? { width: 1280, height: 760 };
  await page.screenshot({ path: path.join(SHOTS, 'status-bar.png'),
    clip: { x: vp.width - 560, y: vp.height - 260, width: 560, height: 260 } });
  step(`status bar: "${(await item.innerText()).trim()}"; screenshots in ${SHOTS}`);
  await page.mouse.move(vp.width / 2, vp.height / 3);

  await page.keyboard.press('Tab');
  await waitFor(async () => (await ghost.count()) === 0, 10_000,
    async () => 'the ghost text stayed after Tab');
  await page.keyboard.press('Control+S');
  const completePath = path.join(ws, 'complete.py');
  const accepted = await waitForFile(completePath, (t) => t.split('\n')[COMPLETE_LINE - 1]
    !== COMPLETE_PY.split('\n')[COMPLETE_LINE - 1]);
  const line = accepted.split('\n')[COMPLETE_LINE - 1] ?? '';
  if (!line.startsWith(COMPLETE_KEEP) || line.length <= COMPLETE_KEEP.length) {
    fail(`line ${COMPLETE_LINE} after Tab is ${JSON.stringify(line)}`);
  }
  const squash = (/** @type {string} */ t) => t.replace(/\s+/g, '');
  if (!squash(accepted).includes(squash(COMPLETE_KEEP + shown))) {
    fail(`the saved file does not have the ghost text ${JSON.stringify(shown)} after the `
      + `cursor:\n${accepted}`);
  }
  const check = spawnSync(python, ['-m', 'holefill', 'check', completePath, '--quiet'],
    { encoding: 'utf8' });
  if (check.status !== 0) {
    fail(`holefill check says the accepted file is not completable (${check.status}):\n`
      + `${accepted}\n${check.stdout}${check.stderr}`);
  }
  step(`accepted with Tab, saved: ${JSON.stringify(line)}; holefill check: completable`);

  // ---------------------------------------------------------------- Fill holes
  await openFile(page, 'holes.py');
  await runCommand(page, 'holefill: Fill holes');
  step('Fill holes running');
  const filling = await waitFor(async () => /filling/.test(await item.innerText()), 20_000,
    async () => '').then(() => true, () => false);
  if (filling) {
    await page.screenshot({ path: path.join(SHOTS, 'fill-holes-progress.png'),
      clip: { x: vp.width - 560, y: vp.height - 120, width: 560, height: 120 } });
  }
  const editorText = page.locator('.editor-instance .view-lines').first();
  await waitFor(async () => !(await editorText.innerText()).includes(MARKER), 180_000,
    async () => `the holes were not filled:\n${await editorText.innerText()}`);
  await page.keyboard.press('Control+S');
  const holesPath = path.join(ws, 'holes.py');
  const filled = await waitForFile(holesPath, (t) => !t.includes(MARKER));
  await page.screenshot({ path: path.join(SHOTS, 'fill-holes.png') });
  const parsed = spawnSync(python, ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())',
    holesPath], { encoding: 'utf8' });
  if (parsed.status !== 0) {
    fail(`ast.parse rejects the filled file:\n${filled}\n${parsed.stderr}`);
  }
  // Only the holes changed: the text between them is as it was.
  const pattern = new RegExp(`^${HOLES_PY.split(MARKER).map(escapeRegExp)
    .join('([\\s\\S]+?)')}$`);
  const m = pattern.exec(filled);
  if (m === null || m.length !== 4) {
    fail(`the filled file changed outside the holes:\n${filled}`);
  }
  step(`Fill holes: 3 holes filled, ast.parse accepts the saved file; fills: ${JSON.stringify(
    m.slice(1).map((s) => (s.length > 40 ? `${s.slice(0, 40)}...` : s)))}`);

  // ---------------------------------------------------------------- Fill holes, two cursors
  // No markers: a cursor at the end of each unfinished line is the hole (the server command
  // holefill.fillHoles with both positions, its edit applied through workspace/applyEdit).
  await openFile(page, 'cursors.py');
  await gotoLine(page, CURSORS_LINE, CURSORS_COLUMN);
  await runCommand(page, 'Add Cursor Below');
  await runCommand(page, 'holefill: Fill holes');
  const cursorsPath = path.join(ws, 'cursors.py');
  await waitFor(async () => (await page.locator('.tab.active.dirty').count()) > 0, 180_000,
    async () => 'the two-cursor fill changed nothing');
  await page.keyboard.press('Control+S');
  const twice = await waitForFile(cursorsPath, (t) => t !== CURSORS_PY);
  const ok = spawnSync(python, ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())',
    cursorsPath], { encoding: 'utf8' });
  const lines = twice.split('\n');
  const kept = CURSORS_PY.split('\n');
  if (ok.status !== 0 || !lines[CURSORS_LINE - 1]?.startsWith(kept[CURSORS_LINE - 1] ?? '?')
    || !lines[CURSORS_LINE]?.startsWith(kept[CURSORS_LINE] ?? '?')
    || lines[CURSORS_LINE - 1] === kept[CURSORS_LINE - 1]
    || lines[CURSORS_LINE] === kept[CURSORS_LINE]) {
    fail(`two cursors: expected both lines filled and a valid file:\n${twice}\n${ok.stderr}`);
  }
  step(`Fill holes at two cursors: ${JSON.stringify(lines.slice(CURSORS_LINE - 1,
    CURSORS_LINE + 1))}; ast.parse accepts the saved file`);

  // ---------------------------------------------------------------- two holes, a cancel
  await openFile(page, 'two_holes.py');
  await runCommand(page, 'holefill: Fill holes');
  await waitFor(async () => /filling/.test(await item.innerText()), 60_000,
    async () => `Fill holes did not start: "${await item.innerText()}"`);
  await gotoLine(page, 1, 1);
  await page.keyboard.type('#');  // typing during a fill stops it, and says so
  const stopped = page.locator('.notification-toast', { hasText: 'Fill holes stopped' });
  await stopped.first().waitFor({ state: 'visible', timeout: 30_000 });
  step(`typing stopped the fill: "${(await stopped.first().innerText()).replace(/\s+/g, ' ')}"`);
  await page.keyboard.press('Control+Z');
  await runCommand(page, 'holefill: Fill holes');
  await waitFor(async () => !(await editorText.innerText()).includes(MARKER), 240_000,
    async () => `the two holes were not filled:\n${await editorText.innerText()}`);
  await page.keyboard.press('Control+S');
  const twoPath = path.join(ws, 'two_holes.py');
  const two = await waitForFile(twoPath, (t) => !t.includes(MARKER));
  const functions = spawnSync(python, ['-c', [
    'import ast, sys',
    'tree = ast.parse(open(sys.argv[1]).read())',
    'print(",".join(n.name for n in tree.body if isinstance(n, ast.FunctionDef)))',
  ].join('\n'), twoPath], { encoding: 'utf8' });
  if (functions.status !== 0 || functions.stdout.trim() !== TWO_HOLES_FUNCTIONS.join(',')) {
    fail(`after Fill holes the top-level functions are ${JSON.stringify(functions.stdout.trim())}`
      + `, not ${TWO_HOLES_FUNCTIONS.join(',')}:\n${two}\n${functions.stderr}`);
  }
  const noise = holefillOutput(userData).filter((l) =>
    /Traceback|never retrieved|Task exception/.test(l));
  if (noise.length > 0) {
    fail(`the holefill output has a traceback after a cancelled fill:\n${noise.join('\n')}`);
  }
  step(`two holes filled, functions kept: ${TWO_HOLES_FUNCTIONS.join(', ')}; no traceback`);

  // ---------------------------------------------------------------- holefill not installed
  // A venv of the same Python without holefill in it, chosen in the workspace's settings file
  // (edited on disk, as a project would); the extension restarts the server for it.
  const venv = path.join(path.dirname(ws), 'venv-without-holefill');
  execFileSync(python, ['-m', 'venv', '--without-pip', venv]);
  const bare = path.join(venv, 'bin', 'python');
  const wsSettings = path.join(ws, '.vscode', 'settings.json');
  fs.mkdirSync(path.dirname(wsSettings), { recursive: true });
  fs.writeFileSync(wsSettings, JSON.stringify({ 'holefill.pythonPath': bare }, null, 2));
  const toast = page.locator('.notification-toast', { hasText: 'holefill is not installed' });
  await toast.first().waitFor({ state: 'visible', timeout: 60_000 });
  const said = (await toast.first().innerText()).replace(/\s+/g, ' ');
  const pip = `${bare} -m pip install 'holefill[model]'`;
  if (!said.includes(pip) || !said.includes('Install in terminal')) {
    fail(`the not-installed message does not give the pip command ${pip}: ${said}`);
  }
  await waitFor(async () => (await item.locator('.codicon-error').count()) > 0, 10_000,
    async () => `the status bar does not show the error: "${await item.innerText()}"`);
  await page.screenshot({ path: path.join(SHOTS, 'not-installed.png'),
    clip: { x: vp.width - 640, y: vp.height - 220, width: 640, height: 220 } });
  step(`not installed: "${said.slice(0, 160)}"`);
  fs.rmSync(wsSettings);
  await waitFor(async () => (await item.locator('.codicon-check').count()) > 0, 120_000,
    async () => `no recovery after pythonPath was restored: "${await item.innerText()}"`);
  step('pythonPath restored: the server restarted and is ready');
}

/** The lines of the holefill output channel (its log file under the user data folder). */
function holefillOutput(/** @type {string} */ userData) {
  const walk = (/** @type {string} */ d) => fs.existsSync(d)
    ? fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => e.isDirectory()
      ? walk(path.join(d, e.name)) : [path.join(d, e.name)])
    : [];
  return walk(path.join(userData, 'logs')).filter((f) => /holefill[^/]*\.log$/.test(f))
    .flatMap((f) => fs.readFileSync(f, 'utf8').split('\n'));
}

/** @param {() => Promise<boolean>} ok @param {number} ms @param {() => Promise<string>} why */
async function waitFor(ok, ms, why) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok().catch(() => false)) {
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  fail(await why());
}

/** @param {string} file @param {(text: string) => boolean} ok */
async function waitForFile(file, ok) {
  let text = '';
  await waitFor(async () => ok(text = fs.readFileSync(file, 'utf8')), 15_000,
    async () => `${path.basename(file)} on disk is not as expected:\n${text}`);
  return text;
}

/** @param {import('playwright-core').Page} page @param {string} name */
async function openFile(page, name) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first()
    .waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
  await page.locator(`.tab.active[aria-label*="${name}"]`).waitFor({ timeout: 15_000 });
  await page.locator('.editor-instance .monaco-editor textarea').first().focus();
  step(`opened ${name}`);
}

/** @param {import('playwright-core').Page} page @param {string} title */
async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first()
    .waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 15_000 });
}

/** @param {import('playwright-core').Page} page @param {number} line @param {number} col */
async function gotoLine(page, line, col) {
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  // Go to Line is Quick Open with the ':' prefix; filling the box replaces the prefix too.
  await input.fill(`:${line}:${col}`);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 15_000 });
}

main().catch((err) => {
  console.error(`e2e FAILED after ${((Date.now() - T0) / 1000).toFixed(1)} s: ${err.stack ?? err}`);
  process.exit(1);
});
