import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import {
  activeInterpreter,
  checkHolefill,
  describeFailure,
  findInterpreter,
  installCommand,
  runProcess,
  shellQuote,
  type RunResult,
  type Runner,
} from '../src/interpreter';

const never = async (): Promise<string | undefined> => {
  throw new Error('the Python extension must not be asked');
};

describe('interpreter discovery', () => {
  it('prefers holefill.pythonPath', async () => {
    const interp = await findInterpreter({ setting: () => ' /opt/py/bin/python ',
      pythonExtension: never });
    assert.deepEqual(interp, { command: '/opt/py/bin/python', source: 'setting' });
  });

  it('else takes the Python extension\'s interpreter', async () => {
    const interp = await findInterpreter({ setting: () => '',
      pythonExtension: async () => '/w/.venv/bin/python' });
    assert.deepEqual(interp, { command: '/w/.venv/bin/python', source: 'Python extension' });
  });

  it('else python3, or python on Windows', async () => {
    const none = async () => undefined;
    assert.deepEqual(await findInterpreter({ setting: () => undefined, pythonExtension: none,
      platform: 'linux' }), { command: 'python3', source: 'default' });
    assert.deepEqual(await findInterpreter({ setting: () => undefined, pythonExtension: none,
      platform: 'win32' }), { command: 'python', source: 'default' });
  });

  it('falls back when the Python extension fails', async () => {
    const interp = await findInterpreter({ setting: () => undefined, platform: 'linux',
      pythonExtension: async () => { throw new Error('activation failed'); } });
    assert.deepEqual(interp, { command: 'python3', source: 'default' });
  });

  it('reads the active environment from the Python extension API', async () => {
    const asked: unknown[] = [];
    const api = (fsPath: string | undefined) => ({
      environments: {
        getActiveEnvironmentPath: (resource?: string) => {
          asked.push(resource);
          return { id: 'venv', path: '/w/.venv' };
        },
        resolveEnvironment: async () =>
          ({ executable: { uri: fsPath === undefined ? undefined : { fsPath } } }),
      },
    });
    assert.equal(await activeInterpreter(api('/w/.venv/bin/python'), 'folder'),
      '/w/.venv/bin/python');
    assert.equal(await activeInterpreter(api(undefined)), '/w/.venv');
    assert.deepEqual(asked, ['folder', undefined]);
  });
});

describe('the holefill check', () => {
  const scripted = (res: RunResult): { run: Runner; seen: string[][] } => {
    const seen: string[][] = [];
    return { seen, run: async (cmd, args, cwd) => { seen.push([cmd, ...args, cwd]); return res; } };
  };

  it('imports holefill in the interpreter, in the given folder', async () => {
    const { run, seen } = scripted({ code: 0, stderr: '',
      stdout: '0.1.0\n/usr/bin/python3.11\nTrue\n' });
    const check = await checkHolefill('python3', '/ext', run);
    assert.deepEqual(check, { ok: true, version: '0.1.0', executable: '/usr/bin/python3.11',
      modelLibraries: true });
    assert.equal(seen[0]?.[0], 'python3');
    assert.equal(seen[0]?.[1], '-c');
    assert.match(seen[0]?.[2] ?? '', /^import holefill$/m);
    assert.equal(seen[0]?.[3], '/ext');
  });

  it('says when the model libraries are missing', async () => {
    const { run } = scripted({ code: 0, stderr: '', stdout: '0.1.0\n/p\nFalse\n' });
    const check = await checkHolefill('python3', '/ext', run);
    assert.equal(check.ok && check.modelLibraries, false);
  });

  it('tells a missing package from a missing interpreter and a broken install', async () => {
    const missing = await checkHolefill('python3', '/', scripted({ code: 1, stdout: '',
      stderr: 'Traceback...\nModuleNotFoundError: No module named \'holefill\'\n' }).run);
    assert.deepEqual(missing, { ok: false, reason: 'not-installed',
      detail: 'ModuleNotFoundError: No module named \'holefill\'' });
    const absent = await checkHolefill('/nope/python', '/', scripted({ code: null, stdout: '',
      stderr: '', spawnError: 'ENOENT' }).run);
    assert.deepEqual(absent, { ok: false, reason: 'no-interpreter',
      detail: '/nope/python was not found' });
    const broken = await checkHolefill('python3', '/', scripted({ code: 1, stdout: '',
      stderr: 'ImportError: libcffi.so: cannot open shared object file\n' }).run);
    assert.equal(broken.ok, false);
    assert.equal(!broken.ok && broken.reason, 'broken');
    const slow = await checkHolefill('python3', '/', scripted({ code: null, stdout: '',
      stderr: '', timedOut: true }).run);
    assert.equal(!slow.ok && slow.reason, 'broken');
  });

  it('runs real processes: a missing interpreter and a failing one', async function () {
    this.timeout(20_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'holefill-check-'));
    const absent = await checkHolefill(path.join(dir, 'no-python'), dir, runProcess);
    assert.equal(!absent.ok && absent.reason, 'no-interpreter');
    // A fake interpreter that fails like a Python without holefill.
    const fake = path.join(dir, 'python');
    fs.writeFileSync(fake, '#!/bin/sh\necho "ModuleNotFoundError: No module named \'holefill\'" >&2\n'
      + 'exit 1\n', { mode: 0o755 });
    if (process.platform !== 'win32') {
      const missing = await checkHolefill(fake, dir, runProcess);
      assert.equal(!missing.ok && missing.reason, 'not-installed');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('the install message', () => {
  it('names the interpreter, where it came from, and the pip command', () => {
    const text = describeFailure({ ok: false, reason: 'not-installed', detail: '' },
      { command: '/opt/my py/bin/python', source: 'setting' }, 'linux');
    assert.equal(text, 'holefill is not installed in /opt/my py/bin/python (from '
      + 'holefill.pythonPath). Install it with: \'/opt/my py/bin/python\' -m pip install '
      + '\'holefill[model]\'');
    const dflt = describeFailure({ ok: false, reason: 'not-installed', detail: '' },
      { command: 'python3', source: 'default' }, 'linux');
    assert.match(dflt, /set holefill\.pythonPath/);
    const absent = describeFailure({ ok: false, reason: 'no-interpreter', detail: 'x was not found' },
      { command: 'x', source: 'setting' }, 'linux');
    assert.match(absent, /no Python interpreter at x/);
  });

  it('quotes for the platform\'s shell', () => {
    assert.equal(shellQuote('/usr/bin/python3', 'linux'), '/usr/bin/python3');
    assert.equal(shellQuote("it's", 'linux'), "'it'\\''s'");
    assert.equal(installCommand('C:\\Program Files\\Python\\python.exe', 'win32'),
      "& 'C:\\Program Files\\Python\\python.exe' -m pip install 'holefill[model]'");
  });
});
