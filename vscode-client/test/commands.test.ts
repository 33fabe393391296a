import * as assert from 'node:assert/strict';

import type * as vscode from 'vscode';
import type { WorkspaceEdit } from 'vscode-languageclient';

import {
  COMMANDS,
  FILL_HOLES_COMMAND,
  FILL_HOLES_KIND,
  editMatches,
  fillHoles,
  registerCommands,
  toggleInline,
  type CommandDeps,
  type LspClient,
} from '../src/commands';
import { manifest } from './manifest';
import * as mock from './vscode-mock';

const URI = 'file:///w/a.py';

function versionedEdit(version: number): WorkspaceEdit {
  return {
    documentChanges: [{
      textDocument: { uri: URI, version },
      edits: [{ range: { start: { line: 1, character: 4 }, end: { line: 1, character: 4 } },
        newText: 'pass' }],
    }],
  };
}

/** A language client that answers from a script and records the requests. */
class FakeClient implements LspClient {
  requests: { method: string; param: unknown }[] = [];
  running = true;
  converted: WorkspaceEdit[] = [];

  constructor(private readonly answers: Record<string, (param: unknown) => unknown>) {}

  isRunning(): boolean {
    return this.running;
  }

  async sendRequest<R>(method: string, param: unknown): Promise<R> {
    this.requests.push({ method, param });
    const answer = this.answers[method];
    if (answer === undefined) {
      throw new Error(`unexpected request ${method}`);
    }
    return answer(param) as R;
  }

  readonly protocol2CodeConverter = {
    asWorkspaceEdit: async (edit: WorkspaceEdit): Promise<vscode.WorkspaceEdit> => {
      this.converted.push(edit);
      return new mock.WorkspaceEdit(edit) as unknown as vscode.WorkspaceEdit;
    },
  };
}

function deps(client: LspClient | undefined, extra: Partial<CommandDeps> = {}): CommandDeps & {
  restarts: number; shown: number;
} {
  const d = {
    restarts: 0,
    shown: 0,
    client: () => client,
    notRunningReason: () => 'holefill is not installed in python3',
    languages: () => ['cpp', 'json', 'python'],
    restart: async () => { d.restarts += 1; },
    output: { show: () => { d.shown += 1; } },
    ...extra,
  };
  return d;
}

const fillAction = { title: 'Fill 3 hole(s) in the file', kind: FILL_HOLES_KIND,
  data: { uri: URI, version: 7 } };

beforeEach(() => mock.reset());

describe('command wiring', () => {
  it('registers every command the manifest contributes, and no other', () => {
    registerCommands(deps(undefined));
    const registered = mock.called('registerCommand').map((c) => c.args[0]).sort();
    assert.deepEqual(registered, Object.values(COMMANDS).sort());
    assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), registered);
    for (const c of manifest.contributes.commands) {
      assert.equal(c.category, 'holefill');
    }
  });

  it('keeps clear of the server\'s command id, which the language client registers', () => {
    assert.ok(!(Object.values(COMMANDS) as string[]).includes(FILL_HOLES_COMMAND));
  });

  it('restart and show output go to the controller', async () => {
    const d = deps(undefined);
    registerCommands(d);
    await mock.commands.executeCommand(COMMANDS.restart);
    await mock.commands.executeCommand(COMMANDS.showOutput);
    assert.equal(d.restarts, 1);
    assert.equal(d.shown, 1);
  });
});

describe('Fill holes', () => {
  it('asks for the source.fillHoles action over the whole file, resolves it, applies it',
    async () => {
      mock.state.activeTextEditor = mock.editor('python', 7, [3, 2]);
      const client = new FakeClient({
        'textDocument/codeAction': () => [
          { title: 'Fill the hole at line 2', kind: 'quickfix' }, fillAction],
        'codeAction/resolve': (a) => ({ ...(a as object), edit: versionedEdit(7) }),
      });
      registerCommands(deps(client));
      const outcome = await mock.commands.executeCommand(COMMANDS.fill);
      assert.equal(outcome, 'applied');
      assert.deepEqual(client.requests.map((r) => r.method),
        ['textDocument/codeAction', 'codeAction/resolve']);
      assert.deepEqual(client.requests[0]?.param, {
        textDocument: { uri: URI },
        range: { start: { line: 3, character: 2 }, end: { line: 3, character: 2 } },
        context: { diagnostics: [], only: [FILL_HOLES_KIND], triggerKind: 1 },
      });
      assert.deepEqual(client.requests[1]?.param, fillAction);
      assert.deepEqual(client.converted, [versionedEdit(7)]);
      assert.equal(mock.called('applyEdit').length, 1);
    });

  it('sends the selection as the range', async () => {
    mock.state.activeTextEditor = mock.editor('python', 1, [5, 0, 2, 4]);
    const client = new FakeClient({ 'textDocument/codeAction': () => [] });
    assert.equal(await fillHoles(deps(client)), 'nothing');
    const param = client.requests[0]?.param as { range: unknown };
    assert.deepEqual(param.range,
      { start: { line: 2, character: 4 }, end: { line: 5, character: 0 } });
    assert.match(String(mock.called('showInformationMessage')[0]?.args[0]), /in the selection/);
  });

  it('does not apply an edit computed for another version of the file', async () => {
    mock.state.activeTextEditor = mock.editor('python', 8, [0, 0]);
    const client = new FakeClient({
      'textDocument/codeAction': () => [fillAction],
      'codeAction/resolve': (a) => ({ ...(a as object), edit: versionedEdit(7) }),
    });
    assert.equal(await fillHoles(deps(client)), 'stale');
    assert.equal(mock.called('applyEdit').length, 0);
    assert.match(String(mock.called('showWarningMessage')[0]?.args[0]), /changed/);
  });

  it('says so when the server could not fill the holes', async () => {
    mock.state.activeTextEditor = mock.editor('python', 7, [0, 0]);
    const client = new FakeClient({
      'textDocument/codeAction': () => [fillAction],
      'codeAction/resolve': (a) => a,
    });
    assert.equal(await fillHoles(deps(client)), 'failed');
    assert.equal(mock.called('applyEdit').length, 0);
  });

  it('reports a server error instead of throwing', async () => {
    mock.state.activeTextEditor = mock.editor('python', 7, [0, 0]);
    const client = new FakeClient({
      'textDocument/codeAction': () => { throw new Error('the document changed'); },
    });
    assert.equal(await fillHoles(deps(client)), 'failed');
    assert.match(String(mock.called('showErrorMessage')[0]?.args[0]), /the document changed/);
  });

  it('says a fill was cancelled or stopped by typing, in the server\'s words, not as a failure',
    async () => {
      mock.state.activeTextEditor = mock.editor('python', 7, [0, 0]);
      const stopped = (code: number, message: string) => new FakeClient({
        'textDocument/codeAction': () => [fillAction],
        'codeAction/resolve': () => { throw Object.assign(new Error(message), { code }); },
      });
      assert.equal(await fillHoles(deps(stopped(-32800, 'holefill: Fill holes was cancelled'))),
        'cancelled');
      assert.equal(await fillHoles(deps(stopped(-32801,
        'holefill: Fill holes stopped: the document changed while its holes were being filled '
        + '(typing stops a fill); run it again'))), 'stale');
      const said = mock.called('showInformationMessage').map((c) => String(c.args[0]));
      assert.deepEqual(said, ['holefill: Fill holes was cancelled',
        'holefill: Fill holes stopped: the document changed while its holes were being filled '
        + '(typing stops a fill); run it again']);
      assert.equal(mock.called('showErrorMessage').length, 0);
      assert.ok(!said.some((m) => m.includes('could not be filled')));
    });

  it('with several cursors, runs the server command with their positions', async () => {
    mock.state.activeTextEditor = mock.editor('python', 3, [9, 1], [2, 5], [9, 1]);
    const client = new FakeClient({ 'workspace/executeCommand': () => ({ applied: true }) });
    assert.equal(await fillHoles(deps(client)), 'applied');
    assert.deepEqual(client.requests, [{
      method: 'workspace/executeCommand',
      param: {
        command: FILL_HOLES_COMMAND,
        arguments: [{ uri: URI, positions: [{ line: 2, character: 5 }, { line: 9, character: 1 }] }],
      },
    }]);
    // The server applies its edit itself (workspace/applyEdit), not the command.
    assert.equal(mock.called('applyEdit').length, 0);
  });

  it('asks nothing of the server for other languages, without an editor, or when stopped',
    async () => {
      const client = new FakeClient({});
      assert.equal(await fillHoles(deps(client)), 'no-editor');
      mock.state.activeTextEditor = mock.editor('rust', 1, [0, 0]);
      assert.equal(await fillHoles(deps(client)), 'not-served');
      mock.state.activeTextEditor = mock.editor('python', 1, [0, 0]);
      client.running = false;
      mock.state.messageAnswer = 'Restart server';
      const d = deps(client);
      assert.equal(await fillHoles(d), 'not-running');
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(mock.called('showWarningMessage')[0]?.args,
        ['holefill is not installed in python3', 'Show output', 'Restart server']);
      assert.equal(d.restarts, 1);
      assert.deepEqual(client.requests, []);
    });

  it('checks the version of every change to the document', () => {
    assert.equal(editMatches(versionedEdit(4), URI, 4), true);
    assert.equal(editMatches(versionedEdit(4), URI, 5), false);
    assert.equal(editMatches(versionedEdit(4), 'file:///other.py', 5), true);
    assert.equal(editMatches({ changes: {} }, URI, 5), true);
  });
});

describe('Toggle inline suggestions', () => {
  it('flips the user setting', async () => {
    assert.equal(await toggleInline(), false);
    assert.deepEqual(mock.called('configuration.update')[0]?.args,
      ['holefill.inlineSuggestions', false, mock.ConfigurationTarget.Global]);
    assert.equal(await toggleInline(), true);
  });

  it('flips it in the workspace when the workspace sets it', async () => {
    mock.state.workspaceSettings.set('holefill.inlineSuggestions', false);
    assert.equal(await toggleInline(), true);
    assert.deepEqual(mock.called('configuration.update')[0]?.args,
      ['holefill.inlineSuggestions', true, mock.ConfigurationTarget.Workspace]);
  });
});
