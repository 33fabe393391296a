// A stand-in for the `vscode` module, which exists only inside the editor. setup.ts makes
// `require('vscode')` return this file. It implements what src/ uses, records what the code
// under test did (`calls`), and lets a test script the editor (`state`). Only the modules that
// the unit tests load are covered: extension.ts (the language client) is tested end to end.

export type Recorded = { method: string; args: unknown[] };

export const calls: Recorded[] = [];

export const state: {
  settings: Map<string, unknown>;
  workspaceSettings: Map<string, unknown>;
  activeTextEditor: TextEditor | undefined;
  applyEditResult: boolean;
  messageAnswer: string | undefined;
  commands: Map<string, (...args: unknown[]) => unknown>;
} = {
  settings: new Map(),
  workspaceSettings: new Map(),
  activeTextEditor: undefined,
  applyEditResult: true,
  messageAnswer: undefined,
  commands: new Map(),
};

export function reset(): void {
  calls.length = 0;
  state.settings.clear();
  state.workspaceSettings.clear();
  state.activeTextEditor = undefined;
  state.applyEditResult = true;
  state.messageAnswer = undefined;
  state.commands.clear();
}

export function called(method: string): Recorded[] {
  return calls.filter((c) => c.method === method);
}

function record(method: string, args: unknown[]): void {
  calls.push({ method, args });
}

// ----------------------------------------------------------------------------- values

export class Position {
  constructor(readonly line: number, readonly character: number) {}

  compareTo(other: Position): number {
    return this.line - other.line || this.character - other.character;
  }
}

export class Range {
  readonly start: Position;
  readonly end: Position;

  constructor(start: Position, end: Position) {
    [this.start, this.end] = start.compareTo(end) <= 0 ? [start, end] : [end, start];
  }

  get isEmpty(): boolean {
    return this.start.compareTo(this.end) === 0;
  }
}

export class Selection extends Range {
  constructor(readonly anchor: Position, readonly active: Position) {
    super(anchor, active);
  }
}

export class Uri {
  private constructor(readonly scheme: string, readonly fsPath: string) {}

  static file(p: string): Uri {
    return new Uri('file', p);
  }

  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class WorkspaceEdit {
  constructor(readonly from: unknown = undefined) {}
}

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}

  dispose(): void {
    this.fn();
  }
}

export enum StatusBarAlignment { Left = 1, Right = 2 }

export enum ConfigurationTarget { Global = 1, Workspace = 2, WorkspaceFolder = 3 }

export interface TextDocument {
  uri: Uri;
  languageId: string;
  version: number;
}

export interface TextEditor {
  document: TextDocument;
  selection: Selection;
  selections: Selection[];
}

/** An editor on `uri` with the given cursors (`[line, character]`, or anchor and active). */
export function editor(languageId: string, version: number,
  ...cursors: ([number, number] | [number, number, number, number])[]): TextEditor {
  const selections = cursors.map((c) => c.length === 2
    ? new Selection(new Position(c[0], c[1]), new Position(c[0], c[1]))
    : new Selection(new Position(c[0], c[1]), new Position(c[2], c[3])));
  const doc = { uri: Uri.file('/w/a.py'), languageId, version };
  return { document: doc, selection: selections[0]!, selections };
}

// ----------------------------------------------------------------------------- namespaces

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    record('registerCommand', [id]);
    state.commands.set(id, fn);
    return new Disposable(() => state.commands.delete(id));
  },
  async executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    record('executeCommand', [id, ...args]);
    return state.commands.get(id)?.(...args);
  },
};

function message(kind: string) {
  return async (text: string, ...items: string[]): Promise<string | undefined> => {
    record(kind, [text, ...items]);
    return state.messageAnswer;
  };
}

export const window = {
  get activeTextEditor(): TextEditor | undefined {
    return state.activeTextEditor;
  },
  showInformationMessage: message('showInformationMessage'),
  showWarningMessage: message('showWarningMessage'),
  showErrorMessage: message('showErrorMessage'),
  setStatusBarMessage(text: string, ms: number): Disposable {
    record('setStatusBarMessage', [text, ms]);
    return new Disposable();
  },
};

class Configuration {
  constructor(private readonly section: string) {}

  private key(k: string): string {
    return `${this.section}.${k}`;
  }

  get<T>(k: string, fallback?: T): T | undefined {
    const key = this.key(k);
    if (state.workspaceSettings.has(key)) {
      return state.workspaceSettings.get(key) as T;
    }
    return state.settings.has(key) ? state.settings.get(key) as T : fallback;
  }

  inspect<T>(k: string): { key: string; workspaceValue?: T; globalValue?: T } {
    const key = this.key(k);
    return {
      key,
      workspaceValue: state.workspaceSettings.get(key) as T,
      globalValue: state.settings.get(key) as T,
    };
  }

  async update(k: string, value: unknown, target: ConfigurationTarget): Promise<void> {
    record('configuration.update', [this.key(k), value, target]);
    const map = target === ConfigurationTarget.Global ? state.settings : state.workspaceSettings;
    map.set(this.key(k), value);
  }
}

export const workspace = {
  getConfiguration(section: string): Configuration {
    return new Configuration(section);
  },
  async applyEdit(edit: WorkspaceEdit): Promise<boolean> {
    record('applyEdit', [edit]);
    return state.applyEditResult;
  },
};
