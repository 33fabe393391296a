import * as assert from 'node:assert/strict';

import {
  CLIENT_KEYS,
  SERVER_KEYS,
  changeAction,
  configurationChange,
  documentSelector,
  expandPath,
  languageIds,
  serverOptions,
  type ConfigurationReader,
} from '../src/settings';
import { manifest } from './manifest';

/** What `workspace.getConfiguration('holefill')` returns: every contributed key, with defaults. */
function contributed(overrides: Record<string, unknown> = {}): ConfigurationReader {
  const values: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(manifest.contributes.configuration.properties)) {
    values[key.replace(/^holefill\./, '')] = spec.default;
  }
  Object.assign(values, overrides);
  return { get: <T>(key: string) => values[key] as T | undefined };
}

describe('settings -> initialization options', () => {
  it('sends every server setting under its camelCase name, with the manifest defaults', () => {
    const opts = serverOptions(contributed(), { home: '/home/u' });
    assert.deepEqual(opts, {
      model: null,
      device: 'auto',
      dtype: 'auto',
      maxNewTokens: 64,
      topK: 8,
      temperature: 0,
      languages: ['c', 'cpp', 'json', 'python'],
      multiline: 'auto',
      stayInBlock: true,
      debounceMs: 150,
      holeMarker: '<|hole|>',
      constrained: true,
      trustRemoteCode: false,
      decoder: 'auto',
      inlineWitness: true,
      template: null,
      fimFormat: null,
      remoteTimeout: 20,
    });
  });

  it('never sends the client-only settings (the server warns about unknown keys)', () => {
    const opts = serverOptions(contributed({ pythonPath: '/x/python', inlineSuggestions: false }));
    for (const key of CLIENT_KEYS) {
      assert.ok(!(key in opts), key);
    }
  });

  it('passes user values through as they are (the server validates and names bad ones)', () => {
    const opts = serverOptions(contributed({ maxNewTokens: 12, multiline: 'never', topK: -1 }));
    assert.equal(opts.maxNewTokens, 12);
    assert.equal(opts.multiline, 'never');
    assert.equal(opts.topK, -1);
  });

  it('sends an empty model as null (the bundled model) and expands ~ and ${workspaceFolder}', () => {
    const ctx = { home: '/home/u', workspaceFolder: '/w/proj' };
    assert.equal(serverOptions(contributed({ model: '  ' }), ctx).model, null);
    assert.equal(serverOptions(contributed({ model: '~/models/m' }), ctx).model,
      '/home/u/models/m');
    assert.equal(serverOptions(contributed({ model: '${workspaceFolder}/m' }), ctx).model,
      '/w/proj/m');
    assert.equal(serverOptions(contributed({ model: 'bigcode/tiny' }), ctx).model, 'bigcode/tiny');
  });

  it('skips keys the configuration does not have', () => {
    const opts = serverOptions({ get: <T>(k: string) => (k === 'topK' ? 3 : undefined) as T });
    assert.deepEqual(opts, { topK: 3 });
  });

  it('wraps changes in the "holefill" section for didChangeConfiguration', () => {
    const change = configurationChange(contributed({ temperature: 0.5 }));
    assert.deepEqual(Object.keys(change), ['holefill']);
    assert.equal(change.holefill.temperature, 0.5);
  });

  it('expands paths', () => {
    assert.equal(expandPath('~', { home: '/h' }), '/h');
    assert.equal(expandPath(' ~/py/bin/python ', { home: '/h' }), '/h/py/bin/python');
    assert.equal(expandPath('${workspaceFolder}/.venv/bin/python', { workspaceFolder: '/w' }),
      '/w/.venv/bin/python');
    assert.equal(expandPath('${workspaceFolder}/x', {}), '${workspaceFolder}/x');
  });
});

describe('configuration changes', () => {
  const affects = (...changed: string[]) => (section: string) =>
    changed.some((c) => c === section || c.startsWith(`${section}.`));

  it('restarts for the interpreter, the languages and trust, notifies for the rest', () => {
    assert.equal(changeAction(affects('holefill.pythonPath')), 'restart');
    assert.equal(changeAction(affects('holefill.languages')), 'restart');
    assert.equal(changeAction(affects('holefill.trustRemoteCode')), 'restart');
    assert.equal(changeAction(affects('holefill.model')), 'notify');
    assert.equal(changeAction(affects('holefill.topK', 'holefill.inlineSuggestions')), 'notify');
    assert.equal(changeAction(affects('holefill.inlineSuggestions')), 'client');
    assert.equal(changeAction(affects('editor.fontSize')), 'none');
  });
});

describe('trust', () => {
  it('keeps trustRemoteCode a machine setting: no workspace can turn it on', () => {
    const spec = manifest.contributes.configuration.properties['holefill.trustRemoteCode'];
    assert.equal(spec?.scope, 'machine');
    assert.equal(spec?.default, false);
  });

  it('does not run in untrusted workspaces (their settings could name the code to run)', () => {
    assert.equal(manifest.capabilities.untrustedWorkspaces.supported, false);
  });
});

describe('languages', () => {
  it('maps holefill names and aliases to VS Code language ids', () => {
    assert.deepEqual(languageIds(['Python', 'c++', 'json', 'rust']), ['cpp', 'json', 'python']);
    assert.deepEqual(languageIds(['py']), ['python']);
    assert.deepEqual(languageIds(undefined), ['c', 'cpp', 'json', 'python']);
  });

  it('selects files and unsaved buffers only', () => {
    assert.deepEqual(documentSelector(['python']), [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
    ]);
  });
});

describe('the manifest', () => {
  const props = manifest.contributes.configuration.properties;

  it('contributes exactly the server settings and the client-only ones', () => {
    const keys = Object.keys(props).map((k) => k.replace(/^holefill\./, '')).sort();
    assert.deepEqual(keys, [...SERVER_KEYS, ...CLIENT_KEYS].sort());
  });

  it('activates on every language it can serve', () => {
    const langs = (props['holefill.languages']?.items?.enum ?? []) as string[];
    assert.deepEqual([...manifest.activationEvents].sort(),
      langs.map((l) => `onLanguage:${l}`).sort());
  });
});
