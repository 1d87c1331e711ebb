/** How the codec reads a BTF type (see `BpfObject.typeLayout`). */
export type TypeLayout =
  | { kind: 'int'; size: number; signed: boolean }
  | { kind: 'bool' | 'float' | 'ptr' | 'string' | 'bytes'; size: number }
  | { kind: 'enum'; name: string; size: number; signed: boolean; values: Array<[string, number]> }
  | { kind: 'array'; size: number; len: number; elem: TypeLayout }
  | { kind: 'stack'; size: number; len: number }
  | { kind: 'flex'; size: 0; elem: TypeLayout }
  | {
      kind: 'struct' | 'union'
      name: string
      size: number
      fields: Array<{ name: string; offset: number; bitOffset?: number; bitSize?: number; type: TypeLayout }>
    }
