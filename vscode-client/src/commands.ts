// The commands: Fill holes, Restart server, Toggle inline suggestions, Show output.
//
// Fill holes asks the server, never computes anything itself:
// - one cursor or one selection: the server's code action of kind `source.fillHoles` for that
//   range (an empty range means the whole file), resolved (`codeAction/resolve` runs the model),
//   and its edit applied, unless the file changed meanwhile;
// - several cursors: the server command `holefill.fillHoles` with `{uri, positions}`, which
//   fills a hole at each cursor and applies the edit through `workspace/applyEdit`.
// The client's command ids differ from the server's `holefill.fillHoles` on purpose: the
// language client registers every server command as a VS Code command, and a second
// registration of the same id would fail.

import type { CodeAction, Command, WorkspaceEdit } from 'vscode-languageclient';
import * as vscode from 'vscode';

import { SECTION } from './settings';

export const COMMANDS = {
  fill: 'holefill.fill',
  restart: 'holefill.restart',
  toggleInline: 'holefill.toggleInline',
  showOutput: 'holefill.showOutput',
} as const;

/** The server's code action kind and command (server/holefill/lsp/server.py). */
export const FILL_HOLES_KIND = 'source.fillHoles';
export const FILL_HOLES_COMMAND = 'holefill.fillHoles';

/** The part of `LanguageClient` the commands use; a fake in the unit tests. */
export interface LspClient {
  isRunning(): boolean;
  sendRequest<R>(method: string, param: unknown): Promise<R>;
  readonly protocol2CodeConverter: {
    asWorkspaceEdit(edit: WorkspaceEdit): Promise<vscode.WorkspaceEdit>;
  };
}

export interface CommandDeps {
  /** The running client, if any */
  client(): LspClient | undefined;
  /** Why there is no running client, for the message ("holefill is not installed in ...") */
  notRunningReason(): string | undefined;
  /** The VS Code language ids served now (`holefill.languages`) */
  languages(): readonly string[];
  restart(): Promise<void>;
  output: { show(preserveFocus?: boolean): void };
}

export type FillOutcome =
  | 'applied'
  | 'nothing'
  | 'stale'
  | 'cancelled'
  | 'failed'
  | 'no-editor'
  | 'not-served'
  | 'not-running';

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(COMMANDS.fill, () => fillHoles(deps)),
    vscode.commands.registerCommand(COMMANDS.restart, () => deps.restart()),
    vscode.commands.registerCommand(COMMANDS.toggleInline, () => toggleInline()),
    vscode.commands.registerCommand(COMMANDS.showOutput, () => deps.output.show(true)),
  ];
}

/** Fill holes in the active editor; the outcome is returned for tests and other extensions. */
export async function fillHoles(deps: CommandDeps): Promise<FillOutcome> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showInformationMessage('holefill: open a file to fill its holes.');
    return 'no-editor';
  }
  const doc = editor.document;
  if (!deps.languages().includes(doc.languageId)) {
    void vscode.window.showInformationMessage(
      `holefill does not serve ${doc.languageId} files (see the holefill.languages setting).`);
    return 'not-served';
  }
  const client = deps.client();
  if (client === undefined || !client.isRunning()) {
    const reason = deps.notRunningReason() ?? 'the server is not running';
    void notRunning(reason, deps);
    return 'not-running';
  }
  try {
    if (editor.selections.length > 1) {
      return await fillAtCursors(client, doc, editor.selections);
    }
    return await fillRange(client, doc, editor.selection);
  } catch (err) {
    const stopped = stoppedFill(err);
    if (stopped !== undefined) {
      return stopped;
    }
    const message = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(`holefill: Fill holes failed: ${message}`);
    return 'failed';
  }
}

/** JSON-RPC codes of a fill the server stopped (server/holefill/lsp/errors.py). */
const REQUEST_CANCELLED = -32800;
const CONTENT_MODIFIED = -32801;

/**
 * A fill the user stopped (from its progress item) or that typing stopped: the server's own
 * words, as information, not as "Fill holes failed" nor "could not be filled".
 */
export function stoppedFill(err: unknown): FillOutcome | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err
    ? (err as { code: unknown }).code : undefined;
  if (code !== REQUEST_CANCELLED && code !== CONTENT_MODIFIED) {
    return undefined;
  }
  const raw = err instanceof Error ? err.message : String(err);
  const text = raw.replace(/^holefill: /, '');
  void vscode.window.showInformationMessage(`holefill: ${text}`);
  return code === REQUEST_CANCELLED ? 'cancelled' : 'stale';
}

async function notRunning(reason: string, deps: CommandDeps): Promise<void> {
  const text = /^holefill\b/.test(reason) ? reason : `holefill: ${reason}`;
  const choice = await vscode.window.showWarningMessage(text, 'Show output', 'Restart server');
  if (choice === 'Show output') {
    deps.output.show();
  } else if (choice === 'Restart server') {
    await deps.restart();
  }
}

async function fillRange(client: LspClient, doc: vscode.TextDocument,
  selection: vscode.Selection): Promise<FillOutcome> {
  const uri = doc.uri.toString();
  const version = doc.version;
  const actions = await client.sendRequest<(CodeAction | Command)[] | null>(
    'textDocument/codeAction', {
      textDocument: { uri },
      range: toLspRange(selection),
      context: { diagnostics: [], only: [FILL_HOLES_KIND], triggerKind: 1 /* Invoked */ },
    });
  const action = (actions ?? []).find(isFillAction);
  if (action === undefined) {
    void vscode.window.showInformationMessage(selection.isEmpty
      ? 'holefill: no holes to fill in this file.'
      : 'holefill: no holes to fill in the selection.');
    return 'nothing';
  }
  // The edit is computed here, lazily: resolving runs the model (the server shows progress).
  const resolved = action.edit !== undefined
    ? action
    : await client.sendRequest<CodeAction>('codeAction/resolve', action);
  if (resolved.edit === undefined) {
    void vscode.window.showWarningMessage(
      'holefill: the holes could not be filled (see holefill: Show output).');
    return 'failed';
  }
  if (doc.version !== version || !editMatches(resolved.edit, uri, doc.version)) {
    void vscode.window.showWarningMessage(
      'holefill: the file changed while its holes were being filled; run Fill holes again.');
    return 'stale';
  }
  const edit = await client.protocol2CodeConverter.asWorkspaceEdit(resolved.edit);
  return (await vscode.workspace.applyEdit(edit)) ? 'applied' : 'stale';
}

async function fillAtCursors(client: LspClient, doc: vscode.TextDocument,
  selections: readonly vscode.Selection[]): Promise<FillOutcome> {
  const seen = new Set<string>();
  const positions: { line: number; character: number }[] = [];
  for (const s of [...selections].sort((a, b) => a.active.compareTo(b.active))) {
    const key = `${s.active.line}:${s.active.character}`;
    if (!seen.has(key)) {
      seen.add(key);
      positions.push({ line: s.active.line, character: s.active.character });
    }
  }
  const result = await client.sendRequest<{ applied?: boolean; reason?: string } | null>(
    'workspace/executeCommand', {
      command: FILL_HOLES_COMMAND,
      arguments: [{ uri: doc.uri.toString(), positions }],
    });
  if (result?.applied === true) {
    return 'applied';
  }
  if (result !== null && typeof result.reason === 'string') {
    // stopped (cancelled, the file changed, a newer request): the server says why
    void vscode.window.showInformationMessage(`holefill: ${result.reason}`);
    return 'stale';
  }
  void vscode.window.showInformationMessage('holefill: nothing was filled at the cursors.');
  return 'nothing';
}

function isFillAction(a: CodeAction | Command): a is CodeAction {
  return 'kind' in a && a.kind === FILL_HOLES_KIND;
}

/** The server versions its edits; one computed for an older text must not be applied. */
export function editMatches(edit: WorkspaceEdit, uri: string, version: number): boolean {
  for (const change of edit.documentChanges ?? []) {
    if ('textDocument' in change && change.textDocument.uri === uri
      && change.textDocument.version !== null && change.textDocument.version !== version) {
      return false;
    }
  }
  return true;
}

export function toLspRange(r: vscode.Range): {
  start: { line: number; character: number };
  end: { line: number; character: number };
} {
  // VS Code and LSP (utf-16, the client's position encoding) count alike.
  return {
    start: { line: r.start.line, character: r.start.character },
    end: { line: r.end.line, character: r.end.character },
  };
}

/** Flips `holefill.inlineSuggestions` where it is set (workspace, else user settings). */
export async function toggleInline(): Promise<boolean> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const enabled = !(config.get<boolean>('inlineSuggestions') ?? true);
  const target = config.inspect<boolean>('inlineSuggestions')?.workspaceValue !== undefined
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await config.update('inlineSuggestions', enabled, target);
  vscode.window.setStatusBarMessage(
    `holefill: inline suggestions ${enabled ? 'on' : 'off'}`, 3000);
  return enabled;
}
