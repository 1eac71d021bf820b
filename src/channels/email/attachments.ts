// An email file's shared attachments (issue 15): the regular files of the folder
// `attachments/<file base name>/` of its source, beside `inbox/` (`facturas-enero.txt` takes
// `attachments/facturas-enero/`). Read once, with the file, within the service's limits (at most
// 10 files, 8 MB in all: docs/channels.md "Email"), and sent to every recipient as root
// `attachments`. No folder: no attachments.
import { lookup } from 'mime-types';
import type { FileReasonCode } from '../../errors.ts';
import { baseName, type HeldFolder, type Source, SourceFileError } from '../../sources/source.ts';
import type { FileAttachment } from '../../store/store.ts';

/** The service's limit of attachments a request (docs/channels.md "Email"). */
export const MAX_ATTACHMENTS = 10;
/** The service's "8 MB" in all, read as 8,000,000 bytes (as the sandbox does). */
export const MAX_ATTACHMENT_BYTES = 8_000_000;

/** The folder of a drop file's attachments, relative to its source's root. */
export function attachmentsFolder(fileName: string): string {
  return `attachments/${baseName(fileName)}`;
}

export type AttachmentsRead =
  | { ok: true; attachments: FileAttachment[]; listed: { name: string; bytes: number }[] }
  | { ok: false; reason: FileReasonCode; message: string };

/**
 * The attachments of the drop file `fileName`, or why the file cannot be sent with them. A
 * backend that cannot be reached throws (the file is read again later), as reading the file
 * itself does.
 */
export async function readAttachments(source: Source, fileName: string): Promise<AttachmentsRead> {
  const folder = attachmentsFolder(fileName);
  let held: HeldFolder | null = null;
  try {
    // Held while its files are read: each is the one listed, read relative to the folder
    // listed, never through a link swapped in meanwhile (docs/sources.md "Attachments").
    held = await source.openFolder(folder);
    const files = held.files;
    // A link (or FIFO…) in an attachment's place is never followed: the file is refused, as a
    // link in the inbox is, rather than sent without an attachment its sender meant.
    const odd = files.find((f) => f.kind !== 'file');
    if (odd)
      return {
        ok: false,
        reason: 'NOT_A_REGULAR_FILE',
        message: `${folder}/${odd.name} is ${odd.kind === 'link' ? 'a symbolic link' : 'not a regular file'}: links are never followed; put the file itself there`,
      };
    if (files.length > MAX_ATTACHMENTS)
      return {
        ok: false,
        reason: 'TOO_MANY_ATTACHMENTS',
        message: `${folder}/ holds ${files.length} files; the service takes at most ${MAX_ATTACHMENTS}`,
      };
    const tooLarge = (bytes: number) => ({
      ok: false as const,
      reason: 'ATTACHMENTS_TOO_LARGE' as const,
      message: `the files of ${folder}/ total ${bytes} bytes; the service takes at most ${MAX_ATTACHMENT_BYTES}`,
    });
    const listedBytes = files.reduce((n, f) => n + f.size, 0);
    if (listedBytes > MAX_ATTACHMENT_BYTES) return tooLarge(listedBytes);
    const attachments: FileAttachment[] = [];
    const listed: { name: string; bytes: number }[] = [];
    let total = 0;
    for (const f of files) {
      const chunks: Buffer[] = [];
      for await (const chunk of held.read(f.name)) {
        total += chunk.byteLength;
        // Grown since it was listed: the limit is checked on what is read, not on the listing.
        if (total > MAX_ATTACHMENT_BYTES) return tooLarge(total);
        // Copied: a source may hand out views of buffers it reuses for the next chunks.
        chunks.push(Buffer.from(chunk));
      }
      const bytes = Buffer.concat(chunks);
      attachments.push({
        name: f.name,
        contentType: contentTypeOf(f.name),
        content: bytes.toString('base64'),
      });
      listed.push({ name: f.name, bytes: bytes.length });
    }
    return { ok: true, attachments, listed };
  } catch (err) {
    if (!(err instanceof SourceFileError)) throw err;
    // A link, FIFO or folder in place of an attachment (or the folder), one not readable, or
    // one replaced since it was listed.
    return { ok: false, reason: err.reason, message: `attachments: ${err.message}` };
  } finally {
    await held?.close();
  }
}

/** The attachment's media type by its extension (mime-types' table); unknown: bytes. */
export function contentTypeOf(name: string): string {
  return lookup(name) || 'application/octet-stream';
}
