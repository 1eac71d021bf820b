// The `run` banner and start-up logs show which service dropline talks to, never the
// credentials or query string an operator put in api.baseUrl (issue 10 item 14).
import { afterEach, describe, expect, it } from 'vitest';
import { redactServiceUrl } from '../../src/core/redact.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

describe('api.baseUrl in the run banner', () => {
  let h: PipelineHarness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('shows the service without userinfo or query', async () => {
    // Nothing is sent: the daemon starts without reaching the service.
    h = await PipelineHarness.create({
      api: { baseUrl: 'http://opsuser:Hunter2Secret@127.0.0.1:9/api?apiKey=QueryKey123#frag' },
    });
    await h.start();
    expect(h.daemonOutput).toContain('service:  http://***@127.0.0.1:9/api?<redacted>');
    expect(h.daemonOutput).not.toMatch(/Hunter2Secret|QueryKey123|opsuser/);
  });
});

describe('redactServiceUrl', () => {
  it.each([
    ['https://u:p@svc.example/x?k=v', 'https://***@svc.example/x?<redacted>'],
    ['https://u@svc.example/', 'https://***@svc.example/'],
    ['https://svc.example/base', 'https://svc.example/base'],
    ['not a url?token=x', 'not a url?<redacted>'],
  ])('%s → %s', (url, shown) => {
    expect(redactServiceUrl(url)).toBe(shown);
  });
});
