// The status bar item: starting, loading the model (with the server's percentage), filling holes,
// ready (with the latency of the last suggestion), error.
//
// The language client shows the server's progress and messages itself; this item only watches
// the same messages go by (extension.ts taps the message reader), so nothing here changes what
// the server says or how the client answers it. The server's vocabulary (server.py):
//   $/progress begin titles "holefill: loading model" and "holefill: filling N hole(s)";
//   window/logMessage "holefill 0.1.0: positions in utf-16, model bundled default" at start,
//   "model loaded: NAME (4.2 s)" after each load (at the start and after a model change), and
//   "inline completion: 123 ms, ..." / "fill holes: 456 ms, ..." after each request;
//   window/showMessage with type Error when something failed; while the model stays down
//   (an inference server, a model that fails to load) the repeats come as window/logMessage
//   with type Error instead (server/holefill/lsp/outage.py).

import * as vscode from 'vscode';

/** A JSON-RPC message as the reader delivers it (responses have no method). */
export interface RpcMessage {
  method?: string;
  params?: unknown;
}

type Task = { kind: 'loading' | 'filling'; holes: number; percentage?: number | undefined;
  message?: string | undefined };

/** LSP MessageType.Error */
const MESSAGE_ERROR = 1;

const LATENCY = /^(inline completion|fill holes): (\d+) ms/;
const HELLO = /^holefill (\S+): positions in (\S+), model (.+)$/;
const LOADED = /^model loaded: (.+) \([\d.]+ s\)$/;
const FILLING = /^holefill: filling (\d+) hole/;

/** The part of `vscode.StatusBarItem` this module sets (a plain object in tests). */
export interface StatusItem {
  text: string;
  tooltip: string | vscode.MarkdownString | undefined;
  backgroundColor: vscode.ThemeColor | undefined;
  command: string | vscode.Command | undefined;
  show(): void;
  dispose(): void;
}

export class Status implements vscode.Disposable {
  private tasks = new Map<string, Task>();
  private started = false;
  private error: { message: string; fatal: boolean } | undefined;
  private latency: { what: string; ms: number } | undefined;
  private version: string | undefined;
  private model: string | undefined;
  private interpreter: string | undefined;
  private inline = true;

  constructor(private readonly item: StatusItem, clickCommand: string) {
    item.command = clickCommand;
    this.render();
    item.show();
  }

  /** A new server is being started with `interpreter`; forgets the previous server's state. */
  starting(interpreter: string): void {
    this.tasks.clear();
    this.started = false;
    this.error = undefined;
    this.version = undefined;
    // the previous server's model and latency are not this one's (they stayed after Restart)
    this.model = undefined;
    this.latency = undefined;
    this.interpreter = interpreter;
    this.render();
  }

  /** The client is connected (initialize answered); the model may still be loading. A
   * failure seen before no longer holds (the client restarts a crashed server by itself). */
  running(): void {
    this.started = true;
    this.error = undefined;
    this.render();
  }

  /** Something the client found (holefill missing, the server crashed): stays until a restart. */
  fail(message: string): void {
    this.tasks.clear();
    this.error = { message, fatal: true };
    this.render();
  }

  setInline(enabled: boolean): void {
    this.inline = enabled;
    this.render();
  }

  /** Called for every message from the server. Never throws: it sits in the reader's path. */
  observe(msg: RpcMessage): void {
    try {
      this.handle(msg);
    } catch {
      // A malformed message is the client's problem to report, not the status bar's.
    }
  }

  private handle(msg: RpcMessage): void {
    const params = (msg.params ?? {}) as Record<string, unknown>;
    switch (msg.method) {
      case '$/progress':
        this.progress(String(params.token), (params.value ?? {}) as Record<string, unknown>);
        break;
      case 'window/logMessage':
        // the server shows a failure of the model once per outage and logs the repeats
        // (type Error): a retried load that fails again keeps the error shown here
        if (params.type === MESSAGE_ERROR) {
          this.failed(String(params.message ?? ''));
        } else {
          this.log(String(params.message ?? ''));
        }
        break;
      case 'window/showMessage':
        if (params.type === MESSAGE_ERROR) {
          this.failed(String(params.message ?? ''));
        }
        break;
      default:
        return;
    }
  }

  private progress(token: string, value: Record<string, unknown>): void {
    const pct = typeof value.percentage === 'number' ? value.percentage : undefined;
    const message = typeof value.message === 'string' ? value.message : undefined;
    if (value.kind === 'begin') {
      const title = String(value.title ?? '');
      const filling = FILLING.exec(title);
      if (filling !== null) {
        this.tasks.set(token, { kind: 'filling', holes: Number(filling[1]), percentage: pct });
      } else if (title.startsWith('holefill: loading model')) {
        this.tasks.set(token, { kind: 'loading', holes: 0, percentage: pct, message });
        this.clearTransientError(); // a new model: the old failure no longer applies
        // and the old model's name and latency no longer hold either
        this.model = undefined;
        this.latency = undefined;
      } else {
        return;
      }
    } else if (value.kind === 'report') {
      const task = this.tasks.get(token);
      if (task === undefined) {
        return;
      }
      task.percentage = pct ?? task.percentage;
      task.message = message ?? task.message;
    } else if (value.kind === 'end') {
      if (!this.tasks.delete(token)) {
        return;
      }
    }
    this.render();
  }

  private failed(message: string): void {
    this.error = { message: message.replace(/^holefill: /, ''), fatal: false };
    this.render();
  }

  private log(line: string): void {
    const latency = LATENCY.exec(line);
    if (latency !== null) {
      this.latency = { what: String(latency[1]), ms: Number(latency[2]) };
      this.clearTransientError(); // it answered: whatever failed before works now
      this.render();
      return;
    }
    const loaded = LOADED.exec(line);
    if (loaded !== null) {
      this.model = loaded[1];
      this.render();
      return;
    }
    const hello = HELLO.exec(line);
    if (hello !== null) {
      this.version = hello[1];
      this.model = hello[3];
      this.render();
    }
  }

  private clearTransientError(): void {
    if (this.error !== undefined && !this.error.fatal) {
      this.error = undefined;
    }
  }

  /** The task shown: the newest one still running. */
  private current(): Task | undefined {
    let last: Task | undefined;
    for (const task of this.tasks.values()) {
      last = task;
    }
    return last;
  }

  private render(): void {
    const task = this.current();
    const lines: string[] = [];
    this.item.backgroundColor = undefined;
    if (this.error !== undefined && (this.error.fatal || task === undefined)) {
      this.item.text = '$(error) holefill';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      lines.push(`Error: ${this.error.message}`);
    } else if (task?.kind === 'loading') {
      this.item.text = `$(sync~spin) holefill: loading model${percent(task.percentage)}`;
      lines.push(`Loading the model${task.message ? `: ${task.message}` : ''}`);
    } else if (task?.kind === 'filling') {
      const holes = task.holes === 1 ? '1 hole' : `${task.holes} holes`;
      this.item.text = `$(sync~spin) holefill: filling ${holes}${percent(task.percentage)}`;
      lines.push(`Filling ${holes}`);
    } else if (!this.started) {
      this.item.text = '$(sync~spin) holefill';
      lines.push('Starting the server');
    } else {
      const icon = this.inline ? '$(check)' : '$(circle-slash)';
      const ms = this.latency !== undefined ? ` ${this.latency.ms} ms` : '';
      this.item.text = `${icon} holefill${ms}`;
      lines.push('Ready');
    }
    if (this.version !== undefined) {
      lines.push(`Server: holefill ${this.version}`);
    }
    if (this.model !== undefined) {
      lines.push(`Model: ${this.model}`);
    }
    if (this.interpreter !== undefined) {
      lines.push(`Python: ${this.interpreter}`);
    }
    if (this.latency !== undefined) {
      lines.push(`Last ${this.latency.what}: ${this.latency.ms} ms`);
    }
    lines.push(`Inline suggestions: ${this.inline ? 'on' : 'off'}`);
    lines.push('Click to show the output');
    this.item.tooltip = lines.join('\n');
  }

  dispose(): void {
    this.item.dispose();
  }
}

function percent(p: number | undefined): string {
  return p === undefined ? '' : ` ${Math.round(p)}%`;
}
