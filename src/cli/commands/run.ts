// `dropline run`: the daemon on every configured source (or the embedded default).
import type { Command } from 'commander';
import { redactServiceUrl } from '../../core/redact.ts';
import { commandLogger, configOf } from './context.ts';
import type { SetExit } from './options.ts';

export function registerRun(program: Command, setExit: SetExit): void {
  program
    .command('run')
    .description('the daemon: every source, the delivery-report receiver, the ops server')
    .action(async (_opts: unknown, cmd: Command) => {
      const loaded = await configOf(cmd);
      const [{ startDaemon }, { openRuntime }, { startupWarnings }] = await Promise.all([
        import('../../app/daemon.ts'),
        import('../../app/runtime.ts'),
        import('../../config/warnings.ts'),
      ]);
      const logger = await commandLogger('info');
      const rt = await openRuntime(loaded, { logger, sandbox: 'embed', backgroundCheckpoints: true });
      let daemon: Awaited<ReturnType<typeof startDaemon>> | undefined;
      try {
        daemon = await startDaemon(rt);
        await rt.advertise();
      } catch (err) {
        // What started is stopped, so the error exits at once (not on the forced exit).
        await daemon?.close();
        await rt.close();
        throw err;
      }
      // No await from here to the signal handlers: a stop signal in between would end the
      // process with sandbox.url left behind.
      const { config } = loaded;
      for (const warning of startupWarnings(config, rt.loaded.secrets)) logger.warn(warning);
      const lines = [
        `dropline is running (${loaded.path ? `config ${loaded.path}` : 'embedded default: no dropline.config.json'}).`,
        `  service:  ${rt.sandbox ? `sandbox in this process at ${rt.serviceUrl}` : redactServiceUrl(rt.serviceUrl)}`,
        `  store:    ${config.store.startsWith('sqlite:') ? config.store : redactServiceUrl(config.store)}`,
        `  reports:  delivery reports received at ${daemon.receiver.url}`,
        `  dashboard: ${daemon.ops.url}/  (open it in a browser)`,
        `  ops:      ${daemon.ops.url}/api/files  ${daemon.ops.url}/healthz  ${daemon.ops.url}/readyz`,
        ...config.sources.map((s) =>
          s.type === 'local'
            ? `  source ${s.name}: drop files into ${s.path}/inbox/`
            : `  source ${s.name} (${s.type})`,
        ),
      ];
      const first = config.sources.find((s) => s.type === 'local');
      if (first) {
        lines.push(
          '',
          'Try it:',
          `  cp samples/bulk.txt ${first.path}/inbox/`,
          '  npx dropline status',
          `  cat ${first.path}/reports/bulk.*.report.csv`,
          'Stop with Ctrl-C.',
        );
      }
      process.stdout.write(`${lines.join('\n')}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      logger.info('stopping');
      await daemon.close();
      await rt.close();
      setExit(0);
      // Work the watchdog gave up on (a hung read) may still hold a socket or a timer; it is
      // not waited for: its file resumes at the next start.
      setTimeout(() => process.exit(), 2000).unref();
    });
}
