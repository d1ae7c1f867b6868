// The informer and REST layer against a real kube-apiserver: events for core and custom resources, label
// selectors, and recovery when the connection breaks or silently stalls.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { startApiServer, startTcpProxy, type ApiServer, type TcpProxy } from "../env/index.ts";
import { freshNamespace, waitFor } from "./fixtures/kube.ts";
import {
  Informer,
  kubeListerWatcher,
  type KubeListerWatcherOptions,
  type WatchTarget,
} from "../../src/adapters/kube/informer.ts";
import type { Logger } from "../../src/adapters/kube/log.ts";
import { KubeRest, isNotFound, resourcePath, type KubeObject, type ResourceRef } from "../../src/adapters/kube/rest.ts";

const CONFIGMAPS: ResourceRef = { group: "", version: "v1", plural: "configmaps", namespaced: true };
const WIDGETS: ResourceRef = { group: "runtime.quorum.test", version: "v1", plural: "widgets", namespaced: false };

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

let apiServer: ApiServer;
let rest: KubeRest;

before(async () => {
  apiServer = await startApiServer();
  rest = new KubeRest(apiServer.kubeConfig);
});

after(async () => {
  rest?.close();
  await apiServer?.stop();
});

const newNamespace = () => freshNamespace(rest, "runtime");

function putConfigMap(namespace: string, name: string, data: Record<string, string>, labels?: Record<string, string>) {
  return rest.request<ConfigMap>("POST", resourcePath(CONFIGMAPS, namespace), {
    body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace, labels }, data },
  });
}

function patchConfigMap(namespace: string, name: string, data: Record<string, string>) {
  return rest.request<ConfigMap>("PATCH", resourcePath(CONFIGMAPS, namespace, name), {
    body: { data },
    contentType: "application/merge-patch+json",
  });
}

function deleteConfigMap(namespace: string, name: string) {
  return rest.request("DELETE", resourcePath(CONFIGMAPS, namespace, name));
}

/** Handlers that write "add a", "update a", "delete a" lines, and a logger that keeps warnings and errors. */
function recorder() {
  const events: string[] = [];
  const problems: string[] = [];
  const note = (level: string) => (message: string, meta?: Record<string, unknown>) => {
    if (level === "warn" || level === "error") problems.push(`${level}: ${message} ${JSON.stringify(meta ?? {})}`);
  };
  const logger: Logger = { debug: note("debug"), info: note("info"), warn: note("warn"), error: note("error") };
  return {
    events,
    problems,
    logger,
    handlers: {
      add: (obj: KubeObject) => void events.push(`add ${obj.metadata.name}`),
      update: (obj: KubeObject) => void events.push(`update ${obj.metadata.name}`),
      delete: (obj: KubeObject) => void events.push(`delete ${obj.metadata.name}`),
    },
  };
}

function newInformer<T extends KubeObject>(
  client: KubeRest,
  target: WatchTarget,
  logger: Logger,
  options: { resyncMs?: number; source?: KubeListerWatcherOptions } = {},
): Informer<T> {
  return new Informer<T>(kubeListerWatcher<T>(client, target, options.source), {
    logger,
    resyncMs: options.resyncMs ?? 10 * 60_000,
    backoffBaseMs: 100,
    backoffMaxMs: 1_000,
  });
}

function kubeConfigVia(server: string): KubeConfig {
  const original = apiServer.kubeConfig;
  const cluster = original.getCurrentCluster();
  const user = original.getCurrentUser();
  assert.ok(cluster && user);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, server }],
    users: [user],
    contexts: [{ name: "via-proxy", cluster: cluster.name, user: user.name }],
    currentContext: "via-proxy",
  });
  return kc;
}

/** Runs `body` with a synced ConfigMap informer for `namespace` that reaches the API server through a proxy. */
async function withInformerBehindProxy(
  namespace: string,
  options: { resyncMs?: number; source?: KubeListerWatcherOptions },
  body: (ctx: {
    proxy: TcpProxy;
    viaProxy: KubeRest;
    seen: ReturnType<typeof recorder>;
    informer: Informer<KubeObject>;
  }) => Promise<void>,
): Promise<void> {
  const proxy = await startTcpProxy(apiServer.url);
  const viaProxy = new KubeRest(kubeConfigVia(proxy.url));
  const seen = recorder();
  const informer = newInformer(viaProxy, { resource: CONFIGMAPS, namespace }, seen.logger, options);
  informer.addHandlers(seen.handlers);
  informer.start();
  try {
    await informer.waitForSync();
    await body({ proxy, viaProxy, seen, informer });
  } finally {
    await informer.stop();
    viaProxy.close();
    await proxy.close();
  }
}

describe("kube runtime against a real kube-apiserver", { timeout: 240_000 }, () => {
  it("an informer sees ConfigMaps matching its label selector being added, updated and deleted, and nothing else", async () => {
    const namespace = await newNamespace();
    const otherNamespace = await newNamespace();
    const watched = { "quorum.test/watched": "yes" };
    await putConfigMap(namespace, "before", { v: "1" }, watched);
    await putConfigMap(namespace, "unlabelled", { v: "1" });
    await putConfigMap(otherNamespace, "elsewhere", { v: "1" }, watched);

    const seen = recorder();
    const informer = newInformer<ConfigMap>(
      rest,
      { resource: CONFIGMAPS, namespace, labelSelector: "quorum.test/watched=yes" },
      seen.logger,
    );
    informer.addHandlers(seen.handlers);
    informer.start();
    try {
      await informer.waitForSync();
      assert.deepEqual(
        informer.list().map((cm) => cm.metadata.name),
        ["before"],
      );
      assert.equal(informer.get(`${namespace}/before`)?.data?.v, "1");

      await putConfigMap(namespace, "added", { v: "1" }, watched);
      await patchConfigMap(namespace, "added", { v: "2" });
      await deleteConfigMap(namespace, "added");
      await putConfigMap(namespace, "unlabelled-2", { v: "1" });
      await putConfigMap(otherNamespace, "elsewhere-2", { v: "1" }, watched);
      await patchConfigMap(namespace, "before", { v: "3" });

      await waitFor("the update of 'before'", () => seen.events.includes("update before"));
      assert.deepEqual(seen.events, ["add before", "add added", "update added", "delete added", "update before"]);
      assert.equal(informer.get(`${namespace}/before`)?.data?.v, "3");
      assert.equal(informer.get(`${namespace}/added`), undefined);
    } finally {
      await informer.stop();
    }
    assert.deepEqual(seen.problems, [], "stopping must not log errors");
  });

  it("an informer follows a cluster-scoped custom resource", async () => {
    await rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
      body: {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "widgets.runtime.quorum.test" },
        spec: {
          group: "runtime.quorum.test",
          scope: "Cluster",
          names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
            },
          ],
        },
      },
    });
    const widgetPath = resourcePath(WIDGETS);
    await waitFor("the Widget CRD to be served", async () => {
      try {
        await rest.get(widgetPath);
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    });
    const seen = recorder();
    const informer = newInformer(rest, { resource: WIDGETS }, seen.logger);
    informer.addHandlers(seen.handlers);
    informer.start();
    try {
      await informer.waitForSync();
      await rest.request("POST", widgetPath, {
        body: { apiVersion: "runtime.quorum.test/v1", kind: "Widget", metadata: { name: "w1" }, size: 1 },
      });
      await rest.request("PATCH", resourcePath(WIDGETS, undefined, "w1"), {
        body: { size: 2 },
        contentType: "application/merge-patch+json",
      });
      await rest.request("DELETE", resourcePath(WIDGETS, undefined, "w1"));
      await waitFor("the Widget's delete", () => seen.events.includes("delete w1"));
      assert.deepEqual(seen.events, ["add w1", "update w1", "delete w1"]);
    } finally {
      await informer.stop();
    }
    assert.deepEqual(seen.problems, []);
  });

  it("an informer whose connection is cut retries with backoff and, once back, reports what changed meanwhile", async () => {
    const namespace = await newNamespace();
    await putConfigMap(namespace, "a", { v: "1" });
    await putConfigMap(namespace, "b", { v: "1" });
    await withInformerBehindProxy(namespace, {}, async ({ proxy, viaProxy, seen, informer }) => {
      seen.events.length = 0;
      proxy.refuse(true);
      proxy.cutAll();
      viaProxy.close();
      await deleteConfigMap(namespace, "a");
      await patchConfigMap(namespace, "b", { v: "2" });
      await putConfigMap(namespace, "c", { v: "1" });
      await waitFor("two failed restarts while the API server is unreachable", () => informer.stats.failures >= 2);
      assert.deepEqual(seen.events, [], "nothing can be seen while disconnected");

      proxy.refuse(false);
      await waitFor("the changes made while disconnected", () => seen.events.length >= 3);
      assert.deepEqual([...seen.events].sort(), ["add c", "delete a", "update b"]);

      await putConfigMap(namespace, "d", { v: "1" });
      await waitFor("an event on the new watch", () => seen.events.includes("add d"));
      assert.ok(
        seen.problems.some((p) => p.includes("informer failed; restarting")),
        "the failures are logged",
      );
    });
  });

  it("an informer whose watch silently stalls catches up at the watchdog re-list", async () => {
    const namespace = await newNamespace();
    await withInformerBehindProxy(namespace, { resyncMs: 3_000 }, async ({ proxy, seen, informer }) => {
      // The open watch now receives nothing, yet reports no error.
      proxy.stallOpenConnections();
      await putConfigMap(namespace, "missed-by-the-watch", { v: "1" });
      await waitFor("the watchdog re-list to deliver the ConfigMap", () =>
        seen.events.includes("add missed-by-the-watch"),
      );
      assert.ok(informer.stats.resyncs >= 1);
      assert.equal(informer.stats.failures, 0, "a stalled watch is not an error, only a re-list");
    });
  });

  it("a watch that goes silent for longer than its idle timeout is restarted", async () => {
    const namespace = await newNamespace();
    const source = { watchTimeoutSeconds: 60, idleTimeoutMs: 2_000 };
    await withInformerBehindProxy(namespace, { source }, async ({ proxy, seen }) => {
      proxy.stallOpenConnections();
      await putConfigMap(namespace, "late", { v: "1" });
      await waitFor("the restarted watch to deliver the ConfigMap", () => seen.events.includes("add late"));
      assert.ok(
        seen.problems.some((p) => p.includes("no data from the API server")),
        seen.problems.join("\n"),
      );
    });
  });
});
