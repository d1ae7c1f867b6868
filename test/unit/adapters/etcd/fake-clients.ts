// A counting EtcdClusterClientFactory: every client it opened, with the options it was opened with and whether
// (and how often) it was closed. Each client answers listMembers() with one member named after its serial
// number, so a test can tell which client a lease talks to.
import type {
  EtcdClientOptions,
  EtcdClusterClient,
  EtcdClusterClientFactory,
  EtcdMember,
} from "../../../../src/adapters/etcd/types.ts";

export interface FakeClient extends EtcdClusterClient {
  readonly serial: number;
  readonly options: EtcdClientOptions;
  closes: number;
}

export class FakeEtcdClients {
  readonly opened: FakeClient[] = [];
  /** When set, close() rejects with this message (a transport that fails to shut down). */
  failCloseWith: string | undefined;

  readonly factory: EtcdClusterClientFactory = (options) => {
    const serial = this.opened.length + 1;
    const fakes = this;
    const member = (): EtcdMember => ({
      id: String(serial),
      name: `client-${serial}`,
      peerURLs: [],
      clientURLs: [],
      learner: false,
    });
    const client: FakeClient = {
      serial,
      options,
      closes: 0,
      async listMembers() {
        if (client.closes > 0) throw new Error(`${options.context ?? "etcd"}: client is closed`);
        return [member()];
      },
      async memberStatuses() {
        return [{ memberId: String(serial), reachable: true, leader: true, errors: [] }];
      },
      async alarms() {
        return [];
      },
      async addMember() {
        return member();
      },
      async promoteLearner() {
        return { promoted: true };
      },
      async removeMember() {
        return { removed: true };
      },
      async moveLeader() {},
      async close() {
        client.closes++;
        if (fakes.failCloseWith) throw new Error(fakes.failCloseWith);
      },
    };
    this.opened.push(client);
    return client;
  };

  /** Clients opened and not closed. */
  open(): FakeClient[] {
    return this.opened.filter((client) => client.closes === 0);
  }
}
