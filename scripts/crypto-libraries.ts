/**
 * Writes functions/platform/src/crypto-libraries.generated.json: the libraries that implement the
 * product's algorithms, with the name, version and integrity hash package-lock.json pins, so the
 * CBOM names exactly what was built. Run by `npm start` before it bundles (and by hand before a
 * `wrangler deploy`); functions/platform/src/crypto-libraries.test.ts fails when the committed file
 * and the lockfile disagree.
 *
 *   npx tsx scripts/crypto-libraries.ts
 */
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { buildFacts, CRYPTO_LIBRARIES } from '../functions/platform/src/crypto-library-list.ts'
import { ROOT } from './workers.ts'

export const GENERATED_FILE = path.join(ROOT, 'functions/platform/src/crypto-libraries.generated.json')

export function writeCryptoLibraries(): void {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'))
  const text = `${JSON.stringify(buildFacts(lock), null, 2)}\n`
  let current = ''
  try {
    current = readFileSync(GENERATED_FILE, 'utf8')
  } catch {}
  if (current !== text) writeFileSync(GENERATED_FILE, text)
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  writeCryptoLibraries()
  console.log(`wrote ${path.relative(ROOT, GENERATED_FILE)} (${CRYPTO_LIBRARIES.length} libraries)`)
}
