// One Source per configured source. Each type lives in its own file; this is the only
// place that knows them all. The SFTP and S3 clients are loaded only when configured: the
// AWS SDK alone weighs tens of megabytes in every process that imports it.
import { resolve } from 'node:path';
import type { SourceConfig } from '../config/schema.ts';
import type { Logger } from '../log.ts';
import { LocalSource } from './local-source.ts';
import type { Source } from './source.ts';

export async function createSource(cfg: SourceConfig, logger: Logger): Promise<Source> {
  switch (cfg.type) {
    case 'local':
      return new LocalSource({ name: cfg.name, path: resolve(cfg.path) });
    case 's3': {
      const { S3Source } = await import('./s3-source.ts');
      return new S3Source({
        name: cfg.name,
        bucket: cfg.bucket,
        prefix: cfg.prefix,
        region: cfg.region,
        endpoint: cfg.endpoint,
        forcePathStyle: cfg.forcePathStyle,
        checksums: cfg.checksums,
        logger,
      });
    }
    case 'sftp': {
      const { sftpSourceFromConfig } = await import('./sftp-source.ts');
      return sftpSourceFromConfig(cfg, logger);
    }
  }
}
