// Which Python runs the server, and whether holefill is installed there.
//
// Order: the `holefill.pythonPath` setting, else the interpreter selected in the Python extension
// (its published API, `@vscode/python-extension`), else `python3` (`python` on Windows, where
// `python3` is usually the Microsoft Store stub). Before starting the server the client imports
// holefill in that interpreter, so a missing install is a clear message with the pip command
// instead of a server that dies five times and gives up.

import { execFile } from 'node:child_process';

export type InterpreterSource = 'setting' | 'Python extension' | 'default';

export interface Interpreter {
  command: string;
  source: InterpreterSource;
}

/** Where an interpreter can come from; injected so tests need neither VS Code nor Python. */
export interface InterpreterSources {
  /** `holefill.pythonPath`, already expanded (`~`, `${workspaceFolder}`) */
  setting(): string | undefined;
  /** The Python extension's active interpreter, or undefined when it is not installed */
  pythonExtension(): Promise<string | undefined>;
  platform?: NodeJS.Platform;
}

export function defaultPython(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? 'python' : 'python3';
}

export async function findInterpreter(sources: InterpreterSources): Promise<Interpreter> {
  const configured = sources.setting()?.trim();
  if (configured) {
    return { command: configured, source: 'setting' };
  }
  try {
    const fromExtension = (await sources.pythonExtension())?.trim();
    if (fromExtension) {
      return { command: fromExtension, source: 'Python extension' };
    }
  } catch {
    // A Python extension that fails to activate must not keep holefill from starting.
  }
  return { command: defaultPython(sources.platform), source: 'default' };
}

export interface EnvironmentPath {
  readonly id: string;
  readonly path: string;
}

/** The subset of the Python extension's API used here (see `@vscode/python-extension`). */
export interface PythonEnvironmentsApi<R> {
  environments: {
    getActiveEnvironmentPath(resource?: R): EnvironmentPath;
    resolveEnvironment(
      env: EnvironmentPath,
    ): Promise<{ executable: { uri?: { fsPath: string } | undefined } } | undefined>;
  };
}

/** The executable of the Python extension's active environment for `resource`. */
export async function activeInterpreter<R>(
  api: PythonEnvironmentsApi<R>,
  resource?: R,
): Promise<string | undefined> {
  const envPath = api.environments.getActiveEnvironmentPath(resource);
  const resolved = await api.environments.resolveEnvironment(envPath);
  // An unresolved environment still has a path, usually the executable itself.
  return resolved?.executable.uri?.fsPath ?? envPath.path;
}

// ----------------------------------------------------------------------------- the check

export type Check =
  | { ok: true; version: string; executable: string; modelLibraries: boolean }
  | { ok: false; reason: 'no-interpreter' | 'not-installed' | 'broken'; detail: string };

export interface RunResult {
  /** The exit status; null when the process could not start or was killed */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why the process did not start (`ENOENT`, `EACCES`, ...) */
  spawnError?: string | undefined;
  timedOut?: boolean;
}

export type Runner = (command: string, args: string[], cwd: string) => Promise<RunResult>;

// One process answers everything the client needs; `find_spec` does not import torch, which
// takes seconds.
const CHECK_SCRIPT = [
  'import importlib.util, sys',
  'import holefill',
  'print(holefill.__version__)',
  'print(sys.executable)',
  'print(all(importlib.util.find_spec(m) for m in ("torch", "transformers")))',
].join('\n');

export const CHECK_TIMEOUT_MS = 30_000;

export const runProcess: Runner = (command, args, cwd) =>
  new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: CHECK_TIMEOUT_MS, windowsHide: true },
      (error, stdout, stderr) => {
        const base = { stdout: String(stdout), stderr: String(stderr) };
        if (error === null) {
          resolve({ ...base, code: 0 });
        } else if (typeof error.code === 'number') {
          resolve({ ...base, code: error.code });
        } else if (typeof error.code === 'string') {
          resolve({ ...base, code: null, spawnError: error.code });
        } else {
          resolve({ ...base, code: null, timedOut: error.killed === true });
        }
      });
  });

/**
 * Runs `<python> -c "import holefill ..."` in `cwd`. `cwd` matters: `-c` and `-m` put the working
 * directory first on `sys.path`, so the client runs Python in its own folder, where no project's
 * `holefill/` can shadow the installed package.
 */
export async function checkHolefill(python: string, cwd: string,
  run: Runner = runProcess): Promise<Check> {
  const res = await run(python, ['-c', CHECK_SCRIPT], cwd);
  if (res.spawnError !== undefined) {
    const detail = res.spawnError === 'ENOENT'
      ? `${python} was not found`
      : `${python} could not be started (${res.spawnError})`;
    return { ok: false, reason: 'no-interpreter', detail };
  }
  if (res.code !== 0) {
    if (res.timedOut === true) {
      return { ok: false, reason: 'broken',
        detail: `importing holefill took more than ${CHECK_TIMEOUT_MS / 1000} s` };
    }
    const lastLine = res.stderr.trim().split(/\r?\n/).pop() ?? '';
    if (/No module named '?holefill'?/.test(res.stderr)) {
      return { ok: false, reason: 'not-installed', detail: lastLine };
    }
    return { ok: false, reason: 'broken', detail: lastLine || `exit status ${res.code}` };
  }
  const [version = '?', executable = python, libs = 'False'] = res.stdout.trim().split(/\r?\n/);
  return { ok: true, version, executable, modelLibraries: libs.trim() === 'True' };
}

/** A command line argument as a shell would need it (POSIX or PowerShell quoting). */
export function shellQuote(arg: string, platform: NodeJS.Platform = process.platform): string {
  if (/^[\w@%+=:,./\\-]+$/.test(arg)) {
    return arg;
  }
  return platform === 'win32'
    ? `'${arg.replace(/'/g, "''")}'`
    : `'${arg.replace(/'/g, "'\\''")}'`;
}

/** The PyPI requirement: the server needs the model extra (torch, transformers). */
export const PIP_REQUIREMENT = 'holefill[model]';

export function installCommand(python: string, platform: NodeJS.Platform = process.platform)
  : string {
  const exe = shellQuote(python, platform);
  // PowerShell runs a quoted program only through its call operator.
  const call = platform === 'win32' && exe.startsWith("'") ? `& ${exe}` : exe;
  return `${call} -m pip install ${shellQuote(PIP_REQUIREMENT, platform)}`;
}

/** The message shown when the check fails: what is wrong, and the command that fixes it. */
export function describeFailure(check: Exclude<Check, { ok: true }>, interp: Interpreter,
  platform: NodeJS.Platform = process.platform): string {
  const where = `${interp.command} (${sourceLabel(interp.source)})`;
  switch (check.reason) {
    case 'no-interpreter':
      return `holefill: no Python interpreter at ${where}: ${check.detail}. Set holefill.pythonPath `
        + 'to a Python 3.11 or later where holefill is installed.';
    case 'not-installed':
      return `holefill is not installed in ${where}. Install it with: `
        + `${installCommand(interp.command, platform)}`;
    case 'broken':
      return `holefill cannot be imported in ${where}: ${check.detail}. Reinstall it with: `
        + `${installCommand(interp.command, platform)}`;
  }
}

export function sourceLabel(source: InterpreterSource): string {
  switch (source) {
    case 'setting':
      return 'from holefill.pythonPath';
    case 'Python extension':
      return 'selected in the Python extension';
    case 'default':
      return 'the default; set holefill.pythonPath to choose another';
  }
}
