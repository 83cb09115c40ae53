/**
 * The vector sets the product's implementations are checked against: which file, where it comes
 * from (revision), how many cases, and which test runs it on every build (`npm test` gates every
 * release), plus the runtime self-tests drawn from the same vectors. The counts are asserted
 * against the fixture files by conformance-manifest.test.ts, so this list cannot drift from them.
 */
export interface VectorSet {
  id: string
  name: string
  source: string
  /** The ACVP algorithm revision (FIPS203, FIPS204, FIPS205) or the document's revision. */
  revision: string
  cases: number
  fixture: string
  test: string
  implementation: string
}

export const VECTOR_SETS: readonly VectorSet[] = [
  {
    id: 'acvp-ml-dsa-keygen',
    name: 'ML-DSA keyGen (ML-DSA-44/65/87)',
    source: 'NIST ACVP-Server gen-val/json-files, vsId 42',
    revision: 'FIPS204',
    cases: 3,
    fixture: 'test/fixtures/acvp/ml-dsa-keygen.json',
    test: 'shared/crypto/acvp-conformance.test.ts',
    implementation:
      '@noble/post-quantum (public and expanded secret keys); WebCrypto (public keys: it never exposes the expanded key)',
  },
  {
    id: 'acvp-ml-dsa-siggen',
    name: 'ML-DSA sigGen (pure and internal, deterministic and hedged)',
    source: 'NIST ACVP-Server gen-val/json-files, vsId 42',
    revision: 'FIPS204',
    cases: 5,
    fixture: 'test/fixtures/acvp/ml-dsa-siggen.json',
    test: 'shared/crypto/acvp-conformance.test.ts',
    implementation:
      '@noble/post-quantum (byte for byte); WebCrypto signs hedged only: its signatures of the same messages and contexts are verified by noble',
  },
  {
    id: 'acvp-ml-dsa-sigver',
    name: 'ML-DSA sigVer (valid, modified message, modified signature)',
    source: 'NIST ACVP-Server gen-val/json-files, vsId 42',
    revision: 'FIPS204',
    cases: 7,
    fixture: 'test/fixtures/acvp/ml-dsa-sigver.json',
    test: 'shared/crypto/acvp-conformance.test.ts',
    implementation: '@noble/post-quantum; WebCrypto',
  },
  {
    id: 'acvp-ml-kem-keygen',
    name: 'ML-KEM keyGen (ML-KEM-512/768/1024)',
    source: 'NIST ACVP-Server gen-val/json-files, vsId 42',
    revision: 'FIPS203',
    cases: 3,
    fixture: 'test/fixtures/acvp/ml-kem-keygen.json',
    test: 'shared/crypto/acvp-conformance.test.ts',
    implementation:
      '@noble/post-quantum (all three, both keys); WebCrypto (ML-KEM-768/1024 encapsulation keys)',
  },
  {
    id: 'acvp-ml-kem-encapdecap',
    name: 'ML-KEM encapsulation, decapsulation (incl. implicit rejection), key checks',
    source: 'NIST ACVP-Server gen-val/json-files, vsId 42',
    revision: 'FIPS203',
    cases: 11,
    fixture: 'test/fixtures/acvp/ml-kem-encapdecap.json',
    test: 'shared/crypto/acvp-conformance.test.ts',
    implementation:
      '@noble/post-quantum (every case); WebCrypto (ML-KEM-768/1024: decapsulates the ciphertext of the ACVP m and a modified one, its encapsulations decapsulate in noble, encapsulation-key check)',
  },
  {
    id: 'acvp-slh-dsa-keygen',
    name: 'SLH-DSA keyGen (SHA2-128f, SHAKE-128f, SHAKE-256f)',
    source: 'NIST ACVP-Server gen-val/json-files, vsId 53',
    revision: 'FIPS205',
    cases: 4,
    fixture: 'test/fixtures/acvp/slh-dsa-keygen.json',
    test: 'shared/crypto/acvp-conformance.test.ts',
    implementation: '@noble/post-quantum',
  },
  {
    id: 'transparency-dev-merkle',
    name: 'Merkle inclusion, consistency, subtree inclusion and subtree consistency proofs',
    source: 'transparency-dev/merkle testdata (commit 417fb0c)',
    revision: 'RFC 9162 §2.1; draft-ietf-plants-merkle-tree-certs subtrees',
    cases: 518,
    fixture: 'test/fixtures/merkle/',
    test: 'durable-objects/audit-log/merkle.test.ts',
    implementation: 'durable-objects/audit-log/merkle.ts (SHA-256: @noble/hashes)',
  },
]

/** Where each runtime self-test's vector comes from (shared/crypto/self-test.vectors.ts). */
export const SELF_TEST_SOURCES: Readonly<Record<string, string>> = {
  sha256_kat: 'FIPS 180-4 "abc"',
  ml_dsa_44_keygen_kat: 'ACVP FIPS204 keyGen tcId 1',
  ml_dsa_44_sign_kat: 'ACVP FIPS204 sigGen tcId 7',
  ml_dsa_44_sign_verify:
    'ACVP FIPS204 sigGen tcId 7 message and context, keyGen tcId 1 key; hedged, so checked by verification',
  ml_dsa_44_verify_kat: 'ACVP FIPS204 sigVer tcId 11 (and a 1-bit flip)',
  ml_dsa_65_keygen_kat: 'ACVP FIPS204 keyGen tcId 26',
  ml_dsa_65_sign_kat: 'ACVP FIPS204 sigGen tcId 41',
  ml_dsa_65_sign_verify:
    'ACVP FIPS204 sigGen tcId 41 message and context, keyGen tcId 26 key; hedged, so checked by verification',
  ml_dsa_65_verify_kat: 'ACVP FIPS204 sigVer tcId 43 (and a 1-bit flip)',
  ml_dsa_87_keygen_kat: 'ACVP FIPS204 keyGen tcId 51',
  ml_dsa_87_sign_kat: 'ACVP FIPS204 sigGen tcId 72',
  ml_dsa_87_sign_verify:
    'ACVP FIPS204 sigGen tcId 72 message and context, keyGen tcId 51 key; hedged, so checked by verification',
  ml_dsa_87_verify_kat: 'ACVP FIPS204 sigVer tcId 70 (and a 1-bit flip)',
  ml_kem_768_keygen_kat: 'ACVP FIPS203 keyGen tcId 26',
  ml_kem_768_encaps_kat: 'ACVP FIPS203 encapsulation tcId 26',
  ml_kem_768_encaps_decaps:
    'ACVP FIPS203 keyGen tcId 26 key; randomized encapsulation, checked by decapsulation',
  ml_kem_768_decaps_kat: 'ACVP FIPS203 decapsulation tcId 88',
  ml_kem_768_implicit_rejection: 'FIPS 203 §6.3 implicit rejection, J(z‖c) computed independently',
  slh_dsa_shake_128f_keygen_kat: 'ACVP FIPS205 keyGen tcId 31',
  ed25519_kat: 'RFC 8032 §7.1 TEST 1',
  argon2id_kat: 'RFC 9106 §5.3',
}

/** The ACVP revisions the runtime self-tests draw from. */
export const ACVP_REVISIONS = ['FIPS203', 'FIPS204', 'FIPS205'] as const
