// YAML that Go programs read back as it was meant. kubeadm and client-go decode YAML with sigs.k8s.io/yaml, whose
// go-yaml v2 follows YAML 1.1: there a plain `off`, `yes`, `y` or `on` is a boolean, `2001-12-14` a timestamp and
// `1_000` an integer, and decoding one into a string field fails ("cannot unmarshal bool into Go struct field ... of
// type string"). The `yaml` package defaults to YAML 1.2, where all of them are strings and written plain; as YAML 1.1
// it quotes them, and reads a document the way kubeadm does.
import { parse, stringify } from "yaml";

const GO_YAML = { version: "1.1" } as const;

export function stringifyForGo(value: unknown): string {
  return stringify(value, GO_YAML);
}

export function parseAsGo(text: string): unknown {
  return parse(text, GO_YAML);
}
