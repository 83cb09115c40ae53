/**
 * The code this deployment runs, as the deploy step measured it: DEPLOYED_BUNDLES, a JSON array of
 * `{worker, sha256, bytes}` (one per worker, the SHA-256 of the module uploaded). A Worker cannot
 * hash its own script, so the digests come from whoever built the bundles: `npm start` computes
 * them from the bundles it runs, `scripts/deploy.ts` from the bundles it uploads. Unset means the
 * deployment did not say; the attestation then names no bundle rather than guessing.
 */
import { z } from 'zod'
import { AppError } from '../../../shared/http/errors'

const DeployedBundlesSchema = z
  .array(
    z
      .object({
        worker: z.string().regex(/^[a-z0-9-]{1,63}$/, 'a worker name'),
        sha256: z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex digits'),
        bytes: z.number().int().positive(),
      })
      .strict(),
  )
  .min(1)
  .refine((list) => new Set(list.map((b) => b.worker)).size === list.length, 'each worker once')

export type DeployedBundle = z.infer<typeof DeployedBundlesSchema>[number]

const parsed = new Map<string, DeployedBundle[]>()

/**
 * The deployed bundles, or null when the deployment gave none. An invalid value is a 503 to the
 * caller and names the variable and the rule in the log (never a silent "no bundles").
 */
export function deployedBundles(raw: string | undefined): DeployedBundle[] | null {
  if (raw === undefined || raw.trim() === '') return null
  const cached = parsed.get(raw)
  if (cached) return cached
  let json: unknown
  try {
    json = JSON.parse(raw)
  } catch {
    json = undefined
  }
  const result = DeployedBundlesSchema.safeParse(json)
  if (!result.success) {
    const issue = result.error.issues[0]
    const reason = json === undefined ? 'not JSON' : `${issue?.path.join('.') || 'value'}: ${issue?.message}`
    throw new AppError(
      503,
      'attestation_unavailable',
      'The attestation cannot be issued right now: the deployment facts are misconfigured. Retry later or contact the operator.',
      {
        internalMessage: `DEPLOYED_BUNDLES must be a JSON array of {worker, sha256, bytes}: ${reason}`,
        headers: { 'retry-after': '30' },
      },
    )
  }
  parsed.set(raw, result.data)
  return result.data
}
