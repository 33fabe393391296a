// Loaded by mocha before the tests (.mocharc.json): `require('vscode')` gets vscode-mock.js.
// The real module is injected by the editor into extensions and does not exist in Node.

import * as path from 'node:path';
import Module from 'node:module';

type Resolve = (request: string, ...rest: unknown[]) => string;
const loader = Module as unknown as { _resolveFilename: Resolve };
const resolve = loader._resolveFilename;
const mock = path.join(__dirname, 'vscode-mock.js');

loader._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  return request === 'vscode' ? mock : resolve.call(this, request, ...rest);
};
