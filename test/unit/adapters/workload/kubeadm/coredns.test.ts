// Where the kubeadm flavour's coredns step moves CoreDNS's image (issue 17), by KCP's rules (CAPI v1.14
// controlplane/kubeadm/pkg/workload_cluster_coredns.go), starting from the image kubeadm 1.37's addon phase deploys.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  coreDNSPin,
  moveCoreDNSImage,
  parseImageTag,
  type CoreDNSPin,
} from "../../../../../src/adapters/workload/kubeadm/coredns.ts";

/** kubeadm 1.37's CoreDNS (cmd/kubeadm/app/constants: CoreDNSVersion v1.14.6, default repository registry.k8s.io). */
const KUBEADM_COREDNS = "registry.k8s.io/coredns/coredns:v1.14.6";

describe("what a template pins of CoreDNS", () => {
  const cases: { name: string; clusterConfiguration: unknown; pin: CoreDNSPin | undefined }[] = [
    { name: "no clusterConfiguration pins nothing", clusterConfiguration: undefined, pin: undefined },
    {
      name: "a clusterConfiguration without dns or imageRepository pins nothing",
      clusterConfiguration: { apiServer: { certSANs: ["localhost"] } },
      pin: undefined,
    },
    { name: "empty strings pin nothing", clusterConfiguration: { dns: { imageTag: "" } }, pin: undefined },
    {
      name: "dns.imageTag pins the tag",
      clusterConfiguration: { dns: { imageTag: "v1.14.7" } },
      pin: { imageTag: "v1.14.7" },
    },
    {
      name: "the cluster-wide imageRepository pins the repository, as kubeadm uses it for CoreDNS",
      clusterConfiguration: { imageRepository: "mirror.example/k8s" },
      pin: { imageRepository: "mirror.example/k8s" },
    },
    {
      name: "dns.imageRepository wins over the cluster-wide one",
      clusterConfiguration: { imageRepository: "mirror.example/k8s", dns: { imageRepository: "dns.example" } },
      pin: { imageRepository: "dns.example" },
    },
  ];
  for (const { name, clusterConfiguration, pin } of cases)
    it(name, () => assert.deepEqual(coreDNSPin(clusterConfiguration), pin));
});

describe("moving CoreDNS's image", () => {
  const moves: { name: string; current: string; pin: CoreDNSPin; image: string; minorChanges: boolean }[] = [
    {
      name: "a pinned patch moves the tag and keeps the Corefile's minor",
      current: KUBEADM_COREDNS,
      pin: { imageTag: "v1.14.7" },
      image: "registry.k8s.io/coredns/coredns:v1.14.7",
      minorChanges: false,
    },
    {
      name: "a pinned minor moves the tag and says the minor changes",
      current: KUBEADM_COREDNS,
      pin: { imageTag: "v1.15.0" },
      image: "registry.k8s.io/coredns/coredns:v1.15.0",
      minorChanges: true,
    },
    {
      name: "another registry takes the image name coredns, as kubeadm names it outside registry.k8s.io",
      current: KUBEADM_COREDNS,
      pin: { imageRepository: "mirror.example/k8s/" },
      image: "mirror.example/k8s/coredns:v1.14.6",
      minorChanges: false,
    },
    {
      name: "a pre-1.8 image in registry.k8s.io is renamed coredns/coredns when moved to 1.8 or later",
      current: "registry.k8s.io/coredns:1.7.0",
      pin: { imageTag: "1.8.4" },
      image: "registry.k8s.io/coredns/coredns:1.8.4",
      minorChanges: true,
    },
    {
      name: "a pre-1.8 image in k8s.gcr.io keeps its name for a pre-1.8 tag",
      current: "k8s.gcr.io/coredns:1.7.0",
      pin: { imageTag: "1.7.1" },
      image: "k8s.gcr.io/coredns:1.7.1",
      minorChanges: false,
    },
    {
      name: "a digest is dropped, so the pinned tag is what runs",
      current: `${KUBEADM_COREDNS}@sha256:${"a".repeat(64)}`,
      pin: { imageTag: "v1.14.6" },
      image: KUBEADM_COREDNS,
      minorChanges: false,
    },
  ];
  for (const { name, current, pin, image, minorChanges } of moves) {
    it(name, () => {
      const move = moveCoreDNSImage(current, pin);
      assert.equal(move.kind, "move", JSON.stringify(move));
      assert.equal(move.kind === "move" && move.image, image);
      assert.equal(move.kind === "move" && move.minorChanges, minorChanges);
    });
  }

  it("changes nothing where the image already is what the pin says, the default registry named explicitly", () => {
    assert.deepEqual(moveCoreDNSImage(KUBEADM_COREDNS, { imageTag: "v1.14.6" }), { kind: "unchanged" });
    assert.deepEqual(moveCoreDNSImage(KUBEADM_COREDNS, { imageRepository: "registry.k8s.io" }), {
      kind: "unchanged",
    });
  });

  it("refuses an older CoreDNS, naming both tags and the skip annotation, but not a pre-release of the same", () => {
    const older = moveCoreDNSImage(KUBEADM_COREDNS, { imageTag: "v1.12.1" });
    assert.equal(older.kind, "refused");
    assert.match(
      older.kind === "refused" ? older.reason : "",
      /dns\.imageTag v1\.12\.1 is older than the v1\.14\.6 CoreDNS runs.*controlplane\.cluster\.x-k8s\.io\/skip-coredns/,
    );
    assert.equal(moveCoreDNSImage(KUBEADM_COREDNS, { imageTag: "v1.14.6-rc.1" }).kind, "move");
  });

  it("refuses an image without a tag and a tag that is no version", () => {
    const untagged = moveCoreDNSImage(`registry.k8s.io/coredns/coredns@sha256:${"b".repeat(64)}`, {
      imageTag: "v1.14.7",
    });
    assert.match(untagged.kind === "refused" ? untagged.reason : "", /has no tag/);
    const garbage = moveCoreDNSImage(KUBEADM_COREDNS, { imageTag: "latest" });
    assert.match(garbage.kind === "refused" ? garbage.reason : "", /dns\.imageTag latest is not a CoreDNS version/);
  });

  it("reads image tags as KCP does: a v prefix, a missing patch, and _ for +", () => {
    assert.deepEqual(parseImageTag("v1.14.6"), [1, 14, 6]);
    assert.deepEqual(parseImageTag("1.8"), [1, 8, 0]);
    assert.deepEqual(parseImageTag("v1.14.6_build.1"), [1, 14, 6]);
    assert.equal(parseImageTag("latest"), undefined);
  });
});
