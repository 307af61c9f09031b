import packageJson from '../package.json' with { type: 'json' }

/** The commit the bundle was built from: defined by scripts/bundle.mjs, absent when run from the sources. */
declare const PETSTORE_COMMIT: string | undefined

/**
 * This build's version: the package's, then, as SemVer build metadata, the commit it was bundled
 * from, so that builds of one package version (every build of main) can be told apart, in a rolling
 * upgrade say.
 */
export const VERSION = typeof PETSTORE_COMMIT === 'string' ? `${packageJson.version}+${PETSTORE_COMMIT}` : packageJson.version
