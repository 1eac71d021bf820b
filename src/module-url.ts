// A module started by URL (a worker thread's file) is named `.ts` in the sources and `.js` in
// the built package (dist/, docs/architecture.md "The package"): the import rewriter of the
// build only rewrites import specifiers, not URLs.

/** The URL of the module at `relative` (written with `.ts`) beside `base` (import.meta.url). */
export function moduleUrl(relative: string, base: string): URL {
  return new URL(base.endsWith('.ts') ? relative : relative.replace(/\.ts$/, '.js'), base);
}
