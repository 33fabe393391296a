// The extension's package.json, typed as far as the tests read it.

import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Manifest {
  main: string;
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { supported: boolean | 'limited' } };
  contributes: {
    commands: { command: string; title: string; category: string }[];
    configuration: {
      properties: Record<
        string,
        { default?: unknown; scope?: string; items?: { enum?: unknown[] } }
      >;
    };
  };
}

// out/unit/test/manifest.js -> the package root
export const manifest = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'),
) as Manifest;
