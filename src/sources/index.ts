// One Source per configured source. Each type lives in its own file; this is the only
// place that knows them all.
import { resolve } from 'node:path';
import type { SourceConfig } from '../config/schema.ts';
import type { Logger } from '../log.ts';
import { LocalSource } from './local-source.ts';
import { S3Source } from './s3-source.ts';
import { sftpSourceFromConfig } from './sftp-source.ts';
import type { Source } from './source.ts';

export function createSource(cfg: SourceConfig, logger: Logger): Source {
  switch (cfg.type) {
    case 'local':
      return new LocalSource({ name: cfg.name, path: resolve(cfg.path) });
    case 's3':
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
    case 'sftp':
      return sftpSourceFromConfig(cfg, logger);
  }
}
