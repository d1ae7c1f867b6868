// The part of cloud-init a kubeadm process Machine needs, applied to the bootstrap data CABPK writes: render the
// `## template: jinja` header's `{{ ds.meta_data.* }}` values, write `write_files` into the Machine's node paths,
// and run `runcmd` inside the Machine's namespaces. Anything else in the data (users, mounts, ntp, ...) is refused by
// name rather than ignored: a Machine that silently skipped part of its bootstrap would test nothing.
import { chmodSync, mkdirSync, writeFileSync, appendFileSync } from "node:fs";
import { dirname } from "node:path";
import { parse } from "yaml";
import { hostPathOf } from "./namespaces.ts";

/** The instance metadata a cloud's datasource serves, as cloud-init's `ds.meta_data` names it. */
export interface InstanceMetadata {
  local_hostname: string;
  hostname: string;
  local_ipv4: string;
  instance_id: string;
  provider_id: string;
}

export interface FileToWrite {
  path: string;
  content: Buffer;
  /** e.g. 0o640; cloud-init's default is 0o644. */
  mode: number;
  append: boolean;
}

export interface CloudConfig {
  /** `bootcmd`: shell commands cloud-init runs before it writes the files. */
  bootCommands: string[];
  files: FileToWrite[];
  /** `runcmd`: shell commands, in order, after the files are written. */
  commands: string[];
}

const JINJA_HEADER = "## template: jinja";
/** Keys the runner applies; CABPK writes only these for the templates the e2e uses. */
const SUPPORTED = new Set(["bootcmd", "write_files", "runcmd"]);

/** Renders and parses cloud-init user data; throws naming what it cannot apply. */
export function renderCloudConfig(userData: string, metadata: InstanceMetadata): CloudConfig {
  let text = userData;
  if (text.startsWith(JINJA_HEADER)) {
    text = text.slice(text.indexOf("\n") + 1).replace(/\{\{\s*ds\.meta_data\.([A-Za-z0-9_]+)\s*\}\}/g, (_, key) => {
      if (!(key in metadata))
        throw new Error(`cloud-init: unknown ds.meta_data.${key} (known: ${Object.keys(metadata).join(", ")})`);
      return metadata[key as keyof InstanceMetadata];
    });
  }
  if (/\{\{.*\}\}/.test(text) && userData.startsWith(JINJA_HEADER)) {
    const left = /\{\{.*?\}\}/.exec(text)?.[0];
    throw new Error(`cloud-init: template expression ${left} is not a ds.meta_data value this runner knows`);
  }
  if (!text.startsWith("#cloud-config"))
    throw new Error(`cloud-init: user data is not #cloud-config (starts with ${JSON.stringify(text.slice(0, 40))})`);
  const document = (parse(text) ?? {}) as Record<string, unknown>;
  const unsupported = Object.entries(document)
    .filter(([key, value]) => !SUPPORTED.has(key) && !isEmpty(value))
    .map(([key]) => key);
  if (unsupported.length > 0)
    throw new Error(
      `cloud-init: the process Machine cannot apply ${unsupported.join(", ")} (only bootcmd, write_files and runcmd)`,
    );
  return {
    bootCommands: ((document.bootcmd ?? []) as unknown[]).map(command),
    files: ((document.write_files ?? []) as Record<string, unknown>[]).map(fileToWrite),
    commands: ((document.runcmd ?? []) as unknown[]).map(command),
  };
}

function isEmpty(value: unknown): boolean {
  return value === null || value === undefined || (Array.isArray(value) && value.length === 0);
}

function fileToWrite(entry: Record<string, unknown>): FileToWrite {
  const path = entry.path;
  if (typeof path !== "string" || !path.startsWith("/"))
    throw new Error(`cloud-init: write_files entry without an absolute path`);
  const raw = typeof entry.content === "string" ? entry.content : "";
  const encoding = typeof entry.encoding === "string" ? entry.encoding : "text/plain";
  let content: Buffer;
  if (["b64", "base64"].includes(encoding)) content = Buffer.from(raw, "base64");
  else if (encoding === "text/plain") content = Buffer.from(raw, "utf8");
  else throw new Error(`cloud-init: write_files ${path}: encoding ${encoding} is not supported (text/plain, b64)`);
  const permissions = typeof entry.permissions === "string" ? entry.permissions : "0644";
  if (!/^0?[0-7]{3,4}$/.test(permissions))
    throw new Error(`cloud-init: write_files ${path}: permissions ${permissions}`);
  return { path, content, mode: parseInt(permissions, 8), append: entry.append === true };
}

/** A runcmd or bootcmd entry: a string runs in a shell; a list is an argv, quoted for that shell. */
function command(entry: unknown): string {
  if (typeof entry === "string") return entry;
  if (Array.isArray(entry)) return entry.map((arg) => `'${String(arg).replaceAll("'", `'\\''`)}'`).join(" ");
  throw new Error(`cloud-init: runcmd entry ${JSON.stringify(entry)} is neither a string nor a list`);
}

/** Writes the files into the Machine's directory, where its mount namespace shows them at their node paths. */
export function writeFiles(files: FileToWrite[], machineDir: string, log: string): void {
  for (const file of files) {
    const target = hostPathOf(machineDir, file.path);
    mkdirSync(dirname(target), { recursive: true });
    if (file.append) appendFileSync(target, file.content);
    else writeFileSync(target, file.content);
    chmodSync(target, file.mode);
    appendFileSync(log, `write_files: ${file.path} (${file.content.length} bytes, ${file.mode.toString(8)})\n`);
  }
}
