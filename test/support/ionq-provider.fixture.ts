/**
 * What the `do-reasoning` tests get from ionq-provider.setup.ts (`inject('ionqProvider')`): the
 * fake IonQ's base URL (what the workers call), its control URL (where tests script faults and read
 * the provider's jobs) and its keys. No Node imports: the tests run inside workerd.
 */
export interface IonqProviderFixture {
  readonly baseUrl: string
  readonly controlUrl: string
  readonly keys: { readonly managed: string; readonly tenant: string; readonly tenantNoQpu: string }
}

declare module 'vitest' {
  export interface ProvidedContext {
    ionqProvider: IonqProviderFixture
  }
}
