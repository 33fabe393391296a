// Bundles the extension into one CommonJS file, so the .vsix needs no node_modules
// (`vsce package --no-dependencies`). `vscode` is provided by the editor at run time.
import { build } from 'esbuild';

const production = process.argv.includes('--production');

await build({
  entryPoints: ['src/extension.ts'],
  outfile: 'out/extension.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
});
