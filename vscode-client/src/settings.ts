// The `holefill.*` settings, turned into what the server reads (server/holefill/lsp/settings.py):
// camelCase keys without the `holefill.` prefix, as initialization options and, on change, as
// `workspace/didChangeConfiguration` with `{holefill: {...}}`.
//
// The server warns about every key it does not know, so the client-only settings are never sent
// (which is also why the client does not use `synchronize.configurationSection`: that would send
// the whole section, `pythonPath` included, on every change).

import * as os from 'node:os';
import * as path from 'node:path';

export const SECTION = 'holefill';

/** The keys the server reads, in the order of settings.py's FIELDS. */
export const SERVER_KEYS = [
  'model',
  'device',
  'dtype',
  'maxNewTokens',
  'topK',
  'temperature',
  'languages',
  'multiline',
  'stayInBlock',
  'debounceMs',
  'holeMarker',
  'constrained',
  'trustRemoteCode',
  'decoder',
  'inlineWitness',
  'template',
  'fimFormat',
  'remoteTimeout',
] as const;

export type ServerKey = (typeof SERVER_KEYS)[number];
export type ServerOptions = Partial<Record<ServerKey, unknown>>;

/** Settings only the client reads; changing them never reaches the server. */
export const CLIENT_KEYS = ['pythonPath', 'inlineSuggestions'] as const;

/**
 * Changing these needs a new server process (interpreter, or `trustRemoteCode`: the server takes
 * it only from its initialization options, never from a configuration change) or a new
 * document selector.
 */
export const RESTART_KEYS = ['pythonPath', 'languages', 'trustRemoteCode'] as const;

/** The part of `vscode.WorkspaceConfiguration` used here (a plain object in tests). */
export interface ConfigurationReader {
  get<T>(key: string): T | undefined;
}

export interface PathContext {
  /** The first workspace folder, for `${workspaceFolder}` */
  workspaceFolder?: string | undefined;
  home?: string;
}

/**
 * `~`, `~/x` and `${workspaceFolder}/x` in a path setting, as VS Code users write them. The
 * server runs in another working directory, so a relative folder would not mean what the user
 * meant; a Hugging Face id (`org/name`) is left alone.
 */
export function expandPath(value: string, ctx: PathContext = {}): string {
  const home = ctx.home ?? os.homedir();
  let v = value.trim();
  if (v === '~') {
    return home;
  }
  if (v.startsWith('~/') || v.startsWith('~\\')) {
    v = path.join(home, v.slice(2));
  }
  if (v.includes('${workspaceFolder}') && ctx.workspaceFolder !== undefined) {
    v = v.split('${workspaceFolder}').join(ctx.workspaceFolder);
  }
  return v;
}

/** The options the server gets at `initialize` and after every change. */
export function serverOptions(config: ConfigurationReader, ctx: PathContext = {}): ServerOptions {
  const out: ServerOptions = {};
  for (const key of SERVER_KEYS) {
    const value = config.get<unknown>(key);
    if (value === undefined) {
      continue; // not contributed (a test double): the server keeps its default
    }
    out[key] = value;
  }
  // An empty model setting means "the bundled default", which the server spells null.
  if (typeof out.model === 'string') {
    out.model = out.model.trim() === '' ? null : expandPath(out.model, ctx);
  }
  return out;
}

/** The `settings` of `workspace/didChangeConfiguration`: the server accepts this section form. */
export function configurationChange(config: ConfigurationReader, ctx: PathContext = {}): {
  holefill: ServerOptions;
} {
  return { holefill: serverOptions(config, ctx) };
}

/** What a configuration change asks of the client. */
export type ChangeAction = 'restart' | 'notify' | 'client' | 'none';

/** `affects` is `ConfigurationChangeEvent.affectsConfiguration`. */
export function changeAction(affects: (section: string) => boolean): ChangeAction {
  if (!affects(SECTION)) {
    return 'none';
  }
  if (RESTART_KEYS.some((k) => affects(`${SECTION}.${k}`))) {
    return 'restart';
  }
  if (SERVER_KEYS.some((k) => affects(`${SECTION}.${k}`))) {
    return 'notify';
  }
  return 'client';
}

// VS Code language ids of holefill's languages, by every name settings.py accepts for them.
const LANGUAGE_IDS: Readonly<Record<string, string>> = {
  python: 'python',
  python3: 'python',
  py: 'python',
  c: 'c',
  h: 'c',
  cpp: 'cpp',
  'c++': 'cpp',
  cplusplus: 'cpp',
  cxx: 'cpp',
  json: 'json',
};

/** VS Code language ids for `holefill.languages`; unknown names are dropped (the server names
 * them in its warning). */
export function languageIds(languages: unknown): string[] {
  if (!Array.isArray(languages)) {
    return ['c', 'cpp', 'json', 'python'];
  }
  const ids = new Set<string>();
  for (const name of languages) {
    const id = typeof name === 'string' ? LANGUAGE_IDS[name.toLowerCase()] : undefined;
    if (id !== undefined) {
      ids.add(id);
    }
  }
  return [...ids].sort();
}

/** Files on disk and unsaved buffers; not other schemes (git diffs, output panes). */
export function documentSelector(ids: readonly string[]): { scheme: string; language: string }[] {
  return ids.flatMap((language) => [
    { scheme: 'file', language },
    { scheme: 'untitled', language },
  ]);
}
