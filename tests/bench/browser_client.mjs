// Benchmark rows for the browser client: mints for 100 concurrent calls on an expired token,
// and mints per refresh across 5 tabs. Prints one JSON object.
import { FakeLocks, createBroadcastHub, createTab, createWorld } from "../js/fakes.mjs";

async function concurrentCallsOnAnExpiredToken() {
  const world = createWorld();
  const { client } = createTab(world);
  await client.rpc("ping");
  const before = world.backend.mints.length;
  await world.clock.jump(700_000); // a background tab: timers frozen, the token dead
  await Promise.all(Array.from({ length: 100 }, () => client.rpc("ping")));
  client.close();
  return world.backend.mints.length - before;
}

async function mintsPerRefreshAcrossFiveTabs(refreshes = 3) {
  const world = createWorld();
  const BroadcastChannel = createBroadcastHub(world.clock);
  const locks = new FakeLocks();
  const tabs = Array.from({ length: 5 }, () => createTab(world, { BroadcastChannel, locks, random: () => 0 }));
  await tabs[0].client.rpc("ping");
  await world.clock.advance(0);
  const before = world.backend.mints.length;
  for (let refresh = 0; refresh < refreshes; refresh++) {
    await world.clock.advance(300_000); // each token's half-life: every tab's refresh timer fires
    await world.clock.advance(50);
  }
  for (const { client } of tabs) client.close();
  return (world.backend.mints.length - before) / refreshes;
}

console.log(
  JSON.stringify({
    concurrentCallMints: await concurrentCallsOnAnExpiredToken(),
    fiveTabMintsPerRefresh: await mintsPerRefreshAcrossFiveTabs(),
  }),
);
