import * as assert from 'node:assert/strict';

import { Status, type StatusItem } from '../src/status';

function item(): StatusItem & { shown: boolean } {
  return {
    text: '',
    tooltip: undefined,
    backgroundColor: undefined,
    command: undefined,
    shown: false,
    show() { this.shown = true; },
    dispose() { /* nothing */ },
  };
}

const progress = (token: string, value: object) =>
  ({ method: '$/progress', params: { token, value } });
const log = (message: string) => ({ method: 'window/logMessage', params: { type: 4, message } });

describe('status bar', () => {
  it('goes starting -> loading with progress -> ready with the last latency', () => {
    const it_ = item();
    const status = new Status(it_, 'holefill.showOutput');
    assert.equal(it_.shown, true);
    assert.equal(it_.command, 'holefill.showOutput');
    status.starting('/usr/bin/python3 (the default)');
    assert.equal(it_.text, '$(sync~spin) holefill');
    status.running();
    status.observe(log('holefill 0.1.0: positions in utf-16, model /tmp/tiny'));
    status.observe(progress('t1', { kind: 'begin', title: 'holefill: loading model',
      percentage: 0 }));
    assert.equal(it_.text, '$(sync~spin) holefill: loading model 0%');
    status.observe(progress('t1', { kind: 'report', percentage: 42, message: 'weights' }));
    assert.equal(it_.text, '$(sync~spin) holefill: loading model 42%');
    assert.match(String(it_.tooltip), /Loading the model: weights/);
    status.observe(progress('t1', { kind: 'end', message: 'done' }));
    status.observe(log('model loaded: /tmp/tiny (4.2 s)'));
    assert.equal(it_.text, '$(check) holefill');
    status.observe(log('inline completion: 123 ms, 1 hole(s), 9 tokens, 0 rejected, model 1.0 '
      + 'ms/token, checks 0.2 ms median'));
    assert.equal(it_.text, '$(check) holefill 123 ms');
    const tip = String(it_.tooltip);
    assert.match(tip, /Server: holefill 0\.1\.0/);
    assert.match(tip, /Model: \/tmp\/tiny/);
    assert.match(tip, /Python: \/usr\/bin\/python3/);
    assert.match(tip, /Last inline completion: 123 ms/);
  });

  it('forgets the model and the last latency on Restart and on a model change', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.starting('python3 (the default)');
    status.running();
    status.observe(log('holefill 0.1.0: positions in utf-16, model /tmp/old'));
    status.observe(log('model loaded: /tmp/old (1.0 s)'));
    status.observe(log('inline completion: 123 ms, 1 hole(s)'));
    assert.equal(it_.text, '$(check) holefill 123 ms');
    // a model change: the server loads another model
    status.observe(progress('l2', { kind: 'begin', title: 'holefill: loading model' }));
    assert.doesNotMatch(String(it_.tooltip), /Model: \/tmp\/old|123 ms/);
    status.observe(progress('l2', { kind: 'end' }));
    status.observe(log('model loaded: /tmp/new (2.0 s)'));
    assert.equal(it_.text, '$(check) holefill');
    assert.match(String(it_.tooltip), /Model: \/tmp\/new/);
    status.observe(log('inline completion: 77 ms, 1 hole(s)'));
    // Restart: nothing of the old server stays
    status.starting('python3 (the default)');
    status.running();
    assert.equal(it_.text, '$(check) holefill');
    assert.doesNotMatch(String(it_.tooltip), /Model:|77 ms/);
  });

  it('shows Fill holes while it runs', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.running();
    status.observe(progress('f', { kind: 'begin', title: 'holefill: filling 3 hole(s)' }));
    assert.equal(it_.text, '$(sync~spin) holefill: filling 3 holes');
    status.observe(progress('f', { kind: 'report', percentage: 50.4 }));
    assert.equal(it_.text, '$(sync~spin) holefill: filling 3 holes 50%');
    status.observe(progress('f', { kind: 'end' }));
    status.observe(log('fill holes: 2048 ms, 3 hole(s), ...'));
    assert.equal(it_.text, '$(check) holefill 2048 ms');
  });

  it('shows a server error until the server answers again', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.running();
    status.observe({ method: 'window/showMessage',
      params: { type: 1, message: 'holefill: cannot load the model: no such folder' } });
    assert.equal(it_.text, '$(error) holefill');
    assert.ok(it_.backgroundColor !== undefined);
    assert.match(String(it_.tooltip), /^Error: cannot load the model: no such folder/);
    status.observe({ method: 'window/showMessage', params: { type: 2, message: 'a warning' } });
    assert.equal(it_.text, '$(error) holefill');
    status.observe(log('inline completion: 80 ms, 1 hole(s)'));
    assert.equal(it_.text, '$(check) holefill 80 ms');
    assert.equal(it_.backgroundColor, undefined);
  });

  it('keeps showing an outage whose repeats the server only logs', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.running();
    status.observe({ method: 'window/showMessage',
      params: { type: 1, message: 'holefill: cannot reach the inference server at U' } });
    // the next request loads again (a new loading item clears the old failure) and fails
    status.observe(progress('l2', { kind: 'begin', title: 'holefill: loading model' }));
    status.observe(progress('l2', { kind: 'end' }));
    status.observe({ method: 'window/logMessage',
      params: { type: 1, message: 'holefill: cannot reach the inference server at U (again)' } });
    assert.equal(it_.text, '$(error) holefill');
    assert.match(String(it_.tooltip), /^Error: cannot reach the inference server at U \(again/);
    status.observe(log('inline completion: 80 ms, 1 hole(s)'));
    assert.equal(it_.text, '$(check) holefill 80 ms');
  });

  it('keeps a client-side failure until the next start', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.fail('holefill is not installed in python3');
    status.observe(log('inline completion: 80 ms'));
    assert.equal(it_.text, '$(error) holefill');
    status.starting('python3');
    assert.equal(it_.text, '$(sync~spin) holefill');
  });

  it('clears a crash once the client has restarted the server', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.running();
    status.fail('the server stopped');
    assert.equal(it_.text, '$(error) holefill');
    status.running();
    assert.equal(it_.text, '$(check) holefill');
  });

  it('shows when inline suggestions are off', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.running();
    status.setInline(false);
    assert.equal(it_.text, '$(circle-slash) holefill');
    assert.match(String(it_.tooltip), /Inline suggestions: off/);
  });

  it('ignores other messages, other progress and malformed ones', () => {
    const it_ = item();
    const status = new Status(it_, 'x');
    status.running();
    const before = it_.text;
    status.observe({ method: 'textDocument/publishDiagnostics', params: {} });
    status.observe(progress('o', { kind: 'begin', title: 'indexing' }));
    status.observe(progress('unknown', { kind: 'report', percentage: 3 }));
    status.observe({ method: '$/progress' });
    status.observe({});
    assert.equal(it_.text, before);
  });
});
