/**
 * Measurement: shots drawn from a distribution with a seeded generator, so a job's shots are the
 * same every time its selection is computed again (an alarm that runs twice records one outcome).
 *
 * The generator is xoshiro128** (Blackman & Vigna), seeded through SplitMix32 from a string's
 * SHA-256 (the job id); doubles take 53 bits from two outputs. A shot is a binary search of the
 * cumulative distribution: one pass over 2^n to build it, then O(n) per shot.
 */

export class SeededRandom {
  private s0: number
  private s1: number
  private s2: number
  private s3: number

  /** `seed`: four 32-bit words (not all zero). */
  constructor(seed: readonly [number, number, number, number]) {
    ;[this.s0, this.s1, this.s2, this.s3] = seed.map((w) => w >>> 0) as [number, number, number, number]
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 0x9e3779b9
  }

  /** Expands one 32-bit number into a full state with SplitMix32. */
  static fromNumber(seed: number): SeededRandom {
    let x = seed >>> 0
    const next = () => {
      x = (x + 0x9e3779b9) >>> 0
      let z = x
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
      return (z ^ (z >>> 16)) >>> 0
    }
    return new SeededRandom([next(), next(), next(), next()])
  }

  /** Seeded synchronously by the FNV-1a hash of `text` (for callers that cannot await). */
  static fromText(text: string): SeededRandom {
    let h = 0x811c9dc5
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0
    return SeededRandom.fromNumber(h)
  }

  /** Seeded by the first 16 bytes of SHA-256(text). */
  static async fromString(text: string): Promise<SeededRandom> {
    const digest = new Uint32Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
    return new SeededRandom([digest[0]!, digest[1]!, digest[2]!, digest[3]!])
  }

  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0
    const t = this.s1 << 9
    this.s2 ^= this.s0
    this.s3 ^= this.s1
    this.s1 ^= this.s2
    this.s0 ^= this.s3
    this.s2 ^= t
    this.s3 = rotl(this.s3, 11)
    return result
  }

  /** Uniform in [0, 1) with 53 random bits. */
  nextDouble(): number {
    const hi = this.nextUint32() >>> 5 // 27 bits
    const lo = this.nextUint32() >>> 6 // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0
}

/** The cumulative distribution of `probabilities`, normalised so its last entry is 1. */
export function cumulative(probabilities: ArrayLike<number>): Float64Array {
  const cdf = new Float64Array(probabilities.length)
  let sum = 0
  for (let i = 0; i < probabilities.length; i++) {
    sum += probabilities[i]!
    cdf[i] = sum
  }
  if (!(sum > 0)) throw new Error('cannot sample from a distribution with no mass')
  for (let i = 0; i < cdf.length; i++) cdf[i] = cdf[i]! / sum
  return cdf
}

/** The index whose cumulative bucket holds u ∈ [0, 1). */
export function sampleIndex(cdf: Float64Array, u: number): number {
  let lo = 0
  let hi = cdf.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (cdf[mid]! > u) hi = mid
    else lo = mid + 1
  }
  return lo
}

/** `shots` measurements: basis-state integer → count. */
export function sampleShots(
  probabilities: ArrayLike<number>,
  shots: number,
  rng: SeededRandom,
): Map<number, number> {
  const cdf = cumulative(probabilities)
  const counts = new Map<number, number>()
  for (let s = 0; s < shots; s++) {
    const i = sampleIndex(cdf, rng.nextDouble())
    counts.set(i, (counts.get(i) ?? 0) + 1)
  }
  return counts
}
