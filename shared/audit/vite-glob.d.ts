/**
 * Vite's `import.meta.glob`, which the unit tests inside workerd use to load fixture folders (there
 * is no file system there); typed here so the workers' tsconfig need not pull in vite/client.
 */
interface ImportMeta {
  glob(pattern: string, options: { query: '?raw'; import: 'default'; eager: true }): Record<string, unknown>
}
