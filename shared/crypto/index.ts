/** The crypto module: JOSE with ML-DSA / Ed25519, access tokens, self-tests and password hashing. */
export * from './access-token'
export * from './encoding'
export * from './jwk'
export * from './jws-algorithms'
export * from './password'
export * from './self-test'
export type { SelfTestVectors } from './self-test.vectors'
