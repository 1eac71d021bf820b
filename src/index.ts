// The package's module entry (`import … from 'dropline'`). dropline is a command first; what
// its module offers is what scripts around it need to be stable: the version, and the tables
// of reason and error codes with their texts and hints (docs/errors.md, docs/format.md).
export { DroplineError, ERRORS, type ErrorCode, hintOf, REASONS, type ReasonCode } from './errors.ts';
export { VERSION } from './version.ts';
