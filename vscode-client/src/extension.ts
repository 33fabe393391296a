// holefill for VS Code: a thin client. The language server (`python -m holefill serve`) does all
// the work; this file finds the interpreter, starts the server with the settings, keeps the
// status bar in step with it, and wires the commands.
//
// Inline suggestions come from vscode-languageclient's built-in inline completion feature
// (LSP 3.18 `textDocument/inlineCompletion`); no second provider is registered here. The toggle
// works through that feature's middleware.

import { spawn, type ChildProcess } from 'node:child_process';

import { PythonExtension, PVSC_EXTENSION_ID } from '@vscode/python-extension';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  State,
  StreamMessageReader,
  StreamMessageWriter,
  type DataCallback,
  type LanguageClientOptions,
  type MessageReader,
  type MessageTransports,
} from 'vscode-languageclient/node';

import { COMMANDS, registerCommands, type CommandDeps, type LspClient } from './commands';
import {
  activeInterpreter,
  checkHolefill,
  describeFailure,
  findInterpreter,
  installCommand,
  sourceLabel,
  type Check,
  type Interpreter,
} from './interpreter';
import {
  SECTION,
  changeAction,
  configurationChange,
  documentSelector,
  expandPath,
  languageIds,
  serverOptions,
  type PathContext,
} from './settings';
import { Status, type RpcMessage } from './status';

let controller: Controller | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('holefill', { log: true });
  const item = vscode.window.createStatusBarItem('holefill.status',
    vscode.StatusBarAlignment.Right, 100);
  item.name = 'holefill';
  const status = new Status(item, COMMANDS.showOutput);
  controller = new Controller(context.extensionPath, output, status);
  context.subscriptions.push(
    output,
    status,
    controller,
    ...registerCommands(controller),
    vscode.workspace.onDidChangeConfiguration((e) => controller?.configurationChanged(e)),
  );
  // Activation returns at once; the server starts in the background (the status bar says how
  // it goes), so opening a file is never held up by Python starting.
  void controller.restart();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

/**
 * Passes every message on and shows it to the status bar first. The language client shows the
 * server's progress and messages itself and offers no way to watch them, so the status bar
 * watches the stream instead of replacing the client's handlers.
 */
class TappedReader implements MessageReader {
  constructor(private readonly inner: MessageReader,
    private readonly tap: (msg: RpcMessage) => void) {}

  get onError(): MessageReader['onError'] {
    return this.inner.onError;
  }

  get onClose(): MessageReader['onClose'] {
    return this.inner.onClose;
  }

  get onPartialMessage(): MessageReader['onPartialMessage'] {
    return this.inner.onPartialMessage;
  }

  listen(callback: DataCallback): ReturnType<MessageReader['listen']> {
    return this.inner.listen((msg) => {
      this.tap(msg as RpcMessage);
      callback(msg);
    });
  }

  dispose(): void {
    this.inner.dispose();
  }
}

class Controller implements CommandDeps, vscode.Disposable {
  private lsp: LanguageClient | undefined;
  private child: ChildProcess | undefined;
  private reason: string | undefined = 'the server is starting';
  private served: string[] = [];
  private inline = true;
  private stopping = false;
  private queue: Promise<void> = Promise.resolve();
  private pythonWatch: vscode.Disposable | undefined;

  constructor(private readonly home: string, readonly output: vscode.LogOutputChannel,
    private readonly status: Status) {}

  // ------------------------------------------------------------------------ CommandDeps

  client(): LspClient | undefined {
    return this.lsp;
  }

  notRunningReason(): string | undefined {
    return this.reason;
  }

  languages(): readonly string[] {
    return this.served;
  }

  /** Stop and start again; restarts never overlap (a second waits for the first). */
  restart(): Promise<void> {
    this.queue = this.queue.then(async () => {
      await this.stop();
      await this.start();
    }).catch((err: unknown) => this.failed(`cannot start the server: ${message(err)}`));
    return this.queue;
  }

  // ------------------------------------------------------------------------ lifecycle

  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(SECTION);
  }

  private pathContext(): PathContext {
    return { workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath };
  }

  private async start(): Promise<void> {
    const config = this.config();
    this.served = languageIds(config.get('languages'));
    this.inline = config.get<boolean>('inlineSuggestions') ?? true;
    this.status.setInline(this.inline);
    // Drives the `when` clauses of the Fill holes menu entries.
    void vscode.commands.executeCommand('setContext', 'holefill.languages', this.served);

    const interp = await findInterpreter({
      setting: () => expandPath(config.get<string>('pythonPath') ?? '', this.pathContext()),
      pythonExtension: () => this.pythonExtensionInterpreter(),
    });
    const where = `${interp.command} (${sourceLabel(interp.source)})`;
    this.status.starting(where);
    this.reason = 'the server is starting';
    this.output.info(`Checking holefill in ${where}`);
    const check = await checkHolefill(interp.command, this.home);
    if (!check.ok) {
      const text = describeFailure(check, interp);
      this.failed(text.replace(/^holefill: /, ''));
      void this.offerFix(text, check, interp);
      return;
    }
    this.output.info(`holefill ${check.version} in ${check.executable}`);
    if (!check.modelLibraries) {
      void this.offerFix(`holefill is installed in ${where}, but torch and transformers are not, `
        + `so no model can load. Install them with: ${installCommand(interp.command)}`,
      check, interp);
    }

    const options: LanguageClientOptions = {
      documentSelector: documentSelector(this.served),
      outputChannel: this.output,
      // A function: the client calls it again when it restarts a crashed server.
      initializationOptions: () => serverOptions(this.config(), this.pathContext()),
      middleware: {
        provideInlineCompletionItems: (document, position, context, token, next) =>
          this.inline ? next(document, position, context, token) : undefined,
      },
    };
    const lsp = new LanguageClient('holefill', 'holefill',
      () => this.transports(interp.command), options);
    lsp.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        this.reason = undefined;
        this.status.running();
      } else if (e.newState === State.Stopped && !this.stopping) {
        this.failed('the server stopped (see holefill: Show output)');
      }
    });
    this.lsp = lsp;
    this.stopping = false;
    await lsp.start();
  }

  /** Spawns the server and taps its messages (see TappedReader). */
  private async transports(python: string): Promise<MessageTransports> {
    // The working directory is the extension's own folder: `-m` puts it first on sys.path,
    // and a workspace's `holefill/` folder must not shadow the installed package.
    const child = spawn(python, ['-m', 'holefill', 'serve'], {
      cwd: this.home,
      env: { ...process.env, PYTHONUNBUFFERED: '1' },
      stdio: 'pipe',
      windowsHide: true,
    });
    this.child = child;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => this.output.append(chunk));
    child.on('error', (err) => this.output.error(`holefill server: ${err.message}`));
    child.on('exit', (code, signal) =>
      this.output.info(`holefill server exited (${signal ?? `status ${code}`})`));
    return {
      reader: new TappedReader(new StreamMessageReader(child.stdout),
        (msg) => this.status.observe(msg)),
      writer: new StreamMessageWriter(child.stdin),
      detached: false,
    };
  }

  async stop(): Promise<void> {
    const lsp = this.lsp;
    const child = this.child;
    this.lsp = undefined;
    this.child = undefined;
    this.reason = 'the server is stopped';
    this.stopping = true;
    if (lsp !== undefined) {
      try {
        // dispose(), not stop(): the next client registers the same providers and commands.
        await lsp.dispose(5000);
      } catch (err) {
        this.output.warn(`stopping the server: ${message(err)}`);
      }
    }
    // The client spawned nothing itself (it got streams), so it cannot kill a server that
    // ignored `exit`.
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill();
    }
  }

  private failed(reason: string): void {
    this.reason = reason;
    this.status.fail(reason);
    this.output.error(reason);
  }

  // ------------------------------------------------------------------------ settings

  configurationChanged(e: vscode.ConfigurationChangeEvent): void {
    const action = changeAction((section) => e.affectsConfiguration(section));
    if (action === 'none') {
      return;
    }
    this.inline = this.config().get<boolean>('inlineSuggestions') ?? true;
    this.status.setInline(this.inline);
    if (action === 'restart') {
      void this.restart();
    } else if (action === 'notify' && this.lsp?.isRunning() === true) {
      void this.lsp.sendNotification(DidChangeConfigurationNotification.type,
        { settings: configurationChange(this.config(), this.pathContext()) });
    }
  }

  // ------------------------------------------------------------------------ the interpreter

  private async pythonExtensionInterpreter(): Promise<string | undefined> {
    if (vscode.extensions.getExtension(PVSC_EXTENSION_ID) === undefined) {
      return undefined; // PythonExtension.api() would throw
    }
    const api = await PythonExtension.api();
    // Follow the user's interpreter choice while holefill.pythonPath is unset.
    this.pythonWatch ??= api.environments.onDidChangeActiveEnvironmentPath(() => {
      if (!this.config().get<string>('pythonPath')) {
        void this.restart();
      }
    });
    return activeInterpreter(api, vscode.workspace.workspaceFolders?.[0]?.uri);
  }

  private async offerFix(text: string, check: Check, interp: Interpreter): Promise<void> {
    const command = installCommand(interp.command);
    const actions = !check.ok && check.reason === 'no-interpreter'
      ? ['Open settings']
      : ['Install in terminal', 'Copy command', 'Open settings'];
    if (vscode.extensions.getExtension(PVSC_EXTENSION_ID) !== undefined) {
      actions.push('Select interpreter');
    }
    const choice = check.ok
      ? await vscode.window.showWarningMessage(text, ...actions)
      : await vscode.window.showErrorMessage(text, ...actions);
    switch (choice) {
      case 'Install in terminal': {
        const terminal = vscode.window.createTerminal({ name: 'holefill: install' });
        terminal.show();
        terminal.sendText(command);
        const again = await vscode.window.showInformationMessage(
          'When pip is done, restart the holefill server.', 'Restart server');
        if (again !== undefined) {
          await this.restart();
        }
        break;
      }
      case 'Copy command':
        await vscode.env.clipboard.writeText(command);
        break;
      case 'Open settings':
        await vscode.commands.executeCommand('workbench.action.openSettings',
          'holefill.pythonPath');
        break;
      case 'Select interpreter':
        await vscode.commands.executeCommand('python.setInterpreter');
        break;
      default:
        break;
    }
  }

  dispose(): void {
    this.pythonWatch?.dispose();
    void this.stop();
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
