// The cloud-init runner of the kubeadm process Machines, on user data shaped as CABPK v1.14 writes it
// (bootstrap/kubeadm/pkg/cloudinit: the jinja header, write_files with owner/permissions/encoding, runcmd with kubeadm
// and the sentinel), and on the parts it must refuse rather than skip.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderCloudConfig, writeFiles, type InstanceMetadata } from "../../../e2e/provider/kubeadm/cloud-init.ts";

const metadata: InstanceMetadata = {
  local_hostname: "ip-10-200-1-3",
  hostname: "ip-10-200-1-3",
  local_ipv4: "10.200.1.3",
  instance_id: "demo-control-plane-x7k2p",
  provider_id: "process://kubeadm/demo-control-plane-x7k2p",
};

const CABPK_JOIN = `## template: jinja
#cloud-config

write_files:
-   path: /etc/kubernetes/pki/ca.crt
    owner: root:root
    permissions: '0640'
    content: |
      -----BEGIN CERTIFICATE-----
      MIIB
      -----END CERTIFICATE-----
-   path: /etc/kubernetes/pki/sa.key
    encoding: "base64"
    owner: root:root
    permissions: '0600'
    content: |
      c2VjcmV0
-   path: /run/kubeadm/kubeadm-join-config.yaml
    owner: root:root
    permissions: '0640'
    content: |
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: JoinConfiguration
      nodeRegistration:
        name: '{{ ds.meta_data.local_hostname }}'
-   path: /run/cluster-api/placeholder
    owner: root:root
    permissions: '0640'
    content: "This placeholder file is used to create the /run/cluster-api sub directory"
runcmd:
  - kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml  && echo success > /run/cluster-api/bootstrap-success.complete
  - ["sh", "-c", "echo it's done"]
`;

describe("the cloud-init runner of kubeadm process Machines", () => {
  it("renders ds.meta_data values and keeps CABPK's files, modes, encodings and commands in order", () => {
    const config = renderCloudConfig(CABPK_JOIN, metadata);
    assert.deepEqual(
      config.files.map((file) => [file.path, file.mode.toString(8)]),
      [
        ["/etc/kubernetes/pki/ca.crt", "640"],
        ["/etc/kubernetes/pki/sa.key", "600"],
        ["/run/kubeadm/kubeadm-join-config.yaml", "640"],
        ["/run/cluster-api/placeholder", "640"],
      ],
    );
    assert.equal(config.files[1].content.toString("utf8").trim(), "secret");
    assert.match(config.files[2].content.toString("utf8"), /name: 'ip-10-200-1-3'/);
    assert.deepEqual(config.commands, [
      "kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml  && echo success > /run/cluster-api/bootstrap-success.complete",
      `'sh' '-c' 'echo it'\\''s done'`,
    ]);
    assert.deepEqual(config.bootCommands, []);
  });

  it("refuses a ds.meta_data key no datasource here serves, naming it", () => {
    assert.throws(
      () => renderCloudConfig(CABPK_JOIN.replace("local_hostname", "public_ipv4"), metadata),
      /unknown ds\.meta_data\.public_ipv4/,
    );
  });

  it("refuses user data it cannot apply (users, ntp, mounts...) instead of skipping it", () => {
    const withUsers = `${CABPK_JOIN}users:\n  - name: capi\n    sudo: ALL=(ALL) NOPASSWD:ALL\n`;
    assert.throws(() => renderCloudConfig(withUsers, metadata), /cannot apply users/);
    assert.throws(() => renderCloudConfig("#!/bin/sh\necho hi\n", metadata), /not #cloud-config/);
    const gzip = CABPK_JOIN.replace('encoding: "base64"', 'encoding: "gzip+base64"');
    assert.throws(() => renderCloudConfig(gzip, metadata), /encoding gzip\+base64 is not supported/);
  });

  it("writes the files under the Machine's directory at their node paths, and refuses paths outside them", () => {
    const dir = mkdtempSync(join(tmpdir(), "cloud-init-"));
    try {
      const config = renderCloudConfig(CABPK_JOIN, metadata);
      writeFiles(config.files, dir, join(dir, "cloud-init-output.log"));
      const key = join(dir, "root/etc/kubernetes/pki/sa.key");
      assert.equal(readFileSync(key, "utf8").trim(), "secret");
      assert.equal(statSync(key).mode & 0o777, 0o600);
      assert.throws(
        () =>
          writeFiles(
            [{ path: "/etc/passwd", content: Buffer.from("x"), mode: 0o644, append: false }],
            dir,
            "/dev/null",
          ),
        /\/etc\/passwd is outside the node paths/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
