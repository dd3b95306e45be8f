import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// The level-event bus: game threads post, one consumer takes, in order, never blocking a poster.
/// Producers are real threads (not tasks), because that is how a game posts.
@Suite("The level-event bus")
struct EventBusTests {
  @Test("A capacity is rounded up to a power of two, at least 2")
  func capacityRounding() {
    #expect(LevelEventBus(capacity: 0).capacity == 2)
    #expect(LevelEventBus(capacity: 2).capacity == 2)
    #expect(LevelEventBus(capacity: 3).capacity == 4)
    #expect(LevelEventBus(capacity: 1000).capacity == 1024)
    #expect(LevelEventBus().capacity == LevelEventBus.defaultCapacity)
  }

  @Test("One producer's events come out in the order posted, numbered from 1")
  func oneProducerKeepsOrder() {
    let bus = LevelEventBus(capacity: 128)
    for index in 0..<100 {
      #expect(bus.post("step", ["index": .number(Double(index))]))
    }
    var taken: [LevelEvent] = []
    #expect(bus.drain(into: &taken, limit: 40) == 40)
    while let event = bus.takeNext() { taken.append(event) }
    #expect(taken.map { $0.payload["index"]?.numberValue } == (0..<100).map { Double($0) })
    #expect(taken.map(\.sequence) == Array(1...100))
    #expect(bus.takeNext() == nil)
    #expect(bus.postedCount == 100)
    #expect(bus.droppedCount == 0)
  }

  @Test("8 threads × 5,000 posts while one consumer drains: nothing lost, each thread's order kept, no gaps")
  func manyProducersOneConsumer() {
    let producers = 8
    let postsEach = 5_000
    let total = producers * postsEach
    let bus = LevelEventBus(capacity: total)
    let consumer = ConsumerThread(bus: bus, expecting: total, timeoutSeconds: 30)
    DispatchQueue.concurrentPerform(iterations: producers) { producer in
      for index in 0..<postsEach {
        let accepted = bus.post(
          "hit", ["producer": .number(Double(producer)), "index": .number(Double(index))])
        precondition(accepted, "a bus that holds every event dropped one")
      }
    }
    let taken = consumer.join()

    #expect(taken.count == total)
    #expect(bus.droppedCount == 0)
    #expect(bus.postedCount == UInt64(total))
    // Sequences are 1...N in take order: accepted order is take order, and no number is skipped.
    #expect(taken.map(\.sequence) == Array(1...UInt64(total)))
    // Each producer's events arrive in the order it posted them, all of them.
    var nextIndex = [Int](repeating: 0, count: producers)
    var outOfOrder = 0
    for event in taken {
      let producer = Int(event.payload["producer"]!.numberValue!)
      if Int(event.payload["index"]!.numberValue!) != nextIndex[producer] { outOfOrder += 1 }
      nextIndex[producer] += 1
    }
    #expect(outOfOrder == 0)
    #expect(nextIndex == [Int](repeating: postsEach, count: producers))
  }

  @Test("A full bus drops the newest posts and counts them; accepted events keep their order")
  func floodWithoutConsumer() {
    let bus = LevelEventBus(capacity: 64)
    let threads = 4
    let postsEach = 1_000
    let acceptedByThread = Mutex<[Int]>([])
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      var accepted = 0
      for index in 0..<postsEach
      where bus.post("flood", ["thread": .number(Double(thread)), "index": .number(Double(index))]) {
        accepted += 1
      }
      acceptedByThread.withLock { $0.append(accepted) }
    }
    let accepted = acceptedByThread.withLock { $0.reduce(0, +) }
    #expect(accepted == bus.capacity)
    #expect(bus.postedCount == UInt64(bus.capacity))
    #expect(bus.droppedCount == UInt64(threads * postsEach - bus.capacity))
    #expect(bus.postedCount + bus.droppedCount == UInt64(threads * postsEach))

    // The new drops are reported once.
    #expect(bus.takeNewDrops() == UInt64(threads * postsEach - bus.capacity))
    #expect(bus.takeNewDrops() == 0)

    // What was accepted is intact: 1...capacity, and each thread's events in its own order.
    var taken: [LevelEvent] = []
    #expect(bus.drain(into: &taken) == bus.capacity)
    #expect(taken.map(\.sequence) == Array(1...UInt64(bus.capacity)))
    for thread in 0..<threads {
      let indices = taken.filter { $0.payload["thread"]?.numberValue == Double(thread) }.map {
        $0.payload["index"]!.numberValue!
      }
      #expect(indices == indices.sorted(), "thread \(thread)'s accepted events in its order")
    }

    // Room again: the next post is accepted and numbered right after the last accepted one.
    #expect(bus.post("after"))
    #expect(bus.takeNext()?.sequence == UInt64(bus.capacity) + 1)
    // Only drops since the last report are reported.
    for _ in 0..<(bus.capacity + 5) { bus.post("again") }
    #expect(bus.takeNewDrops() == 5)
    #expect(bus.takeNewDrops() == 0)
  }

  @Test("A small bus wraps around many laps, alone and with a concurrent producer")
  func wrapAround() {
    let bus = LevelEventBus(capacity: 4)
    var expected: UInt64 = 1
    var wrong = 0
    for lap in 0..<5_000 {
      // Post 3, take 3: the slots in use move around the ring, 3,750 laps in all.
      for offset in 0..<3 { bus.post("lap", ["n": .number(Double(lap * 3 + offset))]) }
      var batch: [LevelEvent] = []
      _ = bus.drain(into: &batch)
      for event in batch {
        if event.sequence != expected || event.payload["n"]?.numberValue != Double(expected - 1) { wrong += 1 }
        expected += 1
      }
    }
    #expect(wrong == 0)
    #expect(expected == 15_001)
    #expect(bus.droppedCount == 0)

    // Concurrently: a producer keeps a bus of 8 full (retrying dropped posts) for 25,000 laps' worth.
    let small = LevelEventBus(capacity: 8)
    let total = 200_000
    let consumer = ConsumerThread(bus: small, expecting: total, timeoutSeconds: 60)
    let producer = Thread {
      for index in 0..<total {
        while !small.post("lap", ["n": .number(Double(index))]) { sched_yield() }
      }
    }
    producer.start()
    let taken = consumer.join()
    #expect(taken.count == total)
    #expect(taken.map(\.sequence) == Array(1...UInt64(total)))
    #expect(taken.enumerated().allSatisfy { $0.element.payload["n"]?.numberValue == Double($0.offset) })
  }

  @Test("waitForPost wakes promptly on a post from another thread")
  func waitWakesOnPost() {
    let bus = LevelEventBus(capacity: 16)
    let started = DispatchTime.now().uptimeNanoseconds
    let poster = Thread {
      usleep(50_000)
      bus.post("wake")
    }
    poster.start()
    bus.waitForPost(timeout: .seconds(10))
    let waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds < 2, "woke after \(waitedSeconds) s")
    #expect(bus.takeNext()?.cue == "wake")
  }

  @Test("waitForPost returns after its timeout when nothing is posted, and at once when something waits")
  func waitTimesOut() {
    let bus = LevelEventBus(capacity: 16)
    var started = DispatchTime.now().uptimeNanoseconds
    bus.waitForPost(timeout: .milliseconds(100))
    var waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds >= 0.09 && waitedSeconds < 2, "waited \(waitedSeconds) s")

    bus.post("ready")
    started = DispatchTime.now().uptimeNanoseconds
    bus.waitForPost(timeout: .seconds(10))
    waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds < 0.5, "an event was waiting, yet it slept \(waitedSeconds) s")
  }

  @Test("Posts to a consumer that is not asleep leave no stale wake-up behind")
  func noStaleWakeUps() {
    let bus = LevelEventBus(capacity: 256)
    for _ in 0..<200 { bus.post("busy") }
    var batch: [LevelEvent] = []
    #expect(bus.drain(into: &batch) == 200)
    // A stale semaphore count would cut this sleep short.
    let started = DispatchTime.now().uptimeNanoseconds
    bus.waitForPost(timeout: .milliseconds(100))
    let waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds >= 0.09, "returned after \(waitedSeconds) s with nothing posted")
  }

  @Test("No lost wake-ups: ping-pong posts that land just as the consumer goes to sleep all wake it")
  func noLostWakeUps() {
    // The producer posts the next event the moment it sees the previous one taken, which is just
    // when the consumer turns to `waitForPost`: the race a lost wake-up needs, thousands of times.
    // A lost wake-up shows as a wait that ran to its timeout although the event it then finds had
    // been posted long before (a producer that was merely descheduled posts late, not early).
    let bus = LevelEventBus(capacity: 16)
    let rounds = 20_000
    let takenCount = Atomic<Int>(0)
    let missedPosts = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    let consumer = Thread {
      var count = 0
      var lastWakeNanoseconds: UInt64 = 0
      while count < rounds {
        if let event = bus.takeNext() {
          if event.postedNanoseconds + 100_000_000 < lastWakeNanoseconds { missedPosts.add(1, ordering: .relaxed) }
          count += 1
          takenCount.store(count, ordering: .releasing)
          continue
        }
        bus.waitForPost(timeout: .milliseconds(200))
        lastWakeNanoseconds = DispatchTime.now().uptimeNanoseconds
      }
      done.signal()
    }
    consumer.start()
    let producer = Thread {
      for round in 0..<rounds {
        // A varying pause of up to a few microseconds sweeps the post across the consumer's
        // path from "took the last one" to "asleep".
        for _ in 0..<((round * 7919) % 150) { _ = takenCount.load(ordering: .relaxed) }
        bus.post("ping", ["round": .number(Double(round))])
        while takenCount.load(ordering: .acquiring) <= round { sched_yield() }
      }
    }
    producer.start()
    #expect(done.wait(timeout: .now() + 120) == .success)
    #expect(takenCount.load(ordering: .acquiring) == rounds)
    #expect(missedPosts.load(ordering: .relaxed) == 0, "a sleeping consumer missed a post")
  }

  @Test("wakeConsumer wakes a sleeping consumer, and makes the next wait return at once when given early")
  func wakeConsumer() {
    let bus = LevelEventBus(capacity: 16)
    let waker = Thread {
      usleep(50_000)
      bus.wakeConsumer()
    }
    var started = DispatchTime.now().uptimeNanoseconds
    waker.start()
    bus.waitForPost(timeout: .seconds(10))
    var waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds < 2, "woke after \(waitedSeconds) s")
    #expect(bus.takeNext() == nil)

    bus.wakeConsumer()
    started = DispatchTime.now().uptimeNanoseconds
    bus.waitForPost(timeout: .seconds(10))
    waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds < 0.5, "an early wake was lost: slept \(waitedSeconds) s")

    // The wake was used up: the next wait sleeps its full timeout.
    started = DispatchTime.now().uptimeNanoseconds
    bus.waitForPost(timeout: .milliseconds(100))
    waitedSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    #expect(waitedSeconds >= 0.09)
  }

  @Test("Payload values survive the trip: strings, numbers, booleans")
  func payloadSurvives() {
    let bus = LevelEventBus()
    let payload: CuePayload = ["boss": "Ganon – ガノン", "threat": 2, "ratio": 0.25, "enraged": true, "calm": false]
    let before = DispatchTime.now().uptimeNanoseconds
    #expect(bus.post("boss.enter", payload))
    let after = DispatchTime.now().uptimeNanoseconds
    let event = bus.takeNext()
    #expect(event?.cue == "boss.enter")
    #expect(event?.payload == payload)
    #expect(event?.payload["boss"]?.stringValue == "Ganon – ガノン")
    #expect(event?.payload["threat"]?.numberValue == 2)
    #expect(event?.payload["ratio"]?.numberValue == 0.25)
    #expect(event?.payload["enraged"]?.boolValue == true)
    #expect(event?.payload["calm"]?.boolValue == false)
    #expect(event?.payload["threat"]?.stringValue == nil)
    #expect(event.map { $0.postedNanoseconds >= before && $0.postedNanoseconds <= after } == true)
  }

  @Test("A cue value prints like it reads: 2, 2.5, \"boss\", true")
  func cueValueDescription() {
    #expect(CueValue.number(2).description == "2")
    #expect(CueValue.number(-3).description == "-3")
    #expect(CueValue.number(2.5).description == "2.5")
    #expect(CueValue.number(1e20).description == "1e+20")
    #expect(CueValue.string("boss").description == "\"boss\"")
    #expect(CueValue.bool(true).description == "true")
    #expect(("2" as CueValue) != (2 as CueValue))
  }

  @Test("The audio time is carried; a plain post has none")
  func audioTimeCarried() {
    let bus = LevelEventBus()
    bus.post("bar", ["n": 4], atAudioTime: 12.5)
    bus.post("now")
    #expect(bus.takeNext()?.audioTime == 12.5)
    #expect(bus.takeNext().map { $0.audioTime == nil } == true)
  }
}

/// A consumer on its own thread that drains until it has `expecting` events (or gives up), the
/// way the director will: drain, and sleep in `waitForPost` when there is nothing to take.
private final class ConsumerThread: Sendable {
  private let taken = Mutex<[LevelEvent]>([])
  private let done = DispatchSemaphore(value: 0)
  private let timeoutSeconds: Double

  init(bus: LevelEventBus, expecting count: Int, timeoutSeconds: Double) {
    self.timeoutSeconds = timeoutSeconds
    let thread = Thread { [self] in
      var events: [LevelEvent] = []
      events.reserveCapacity(count)
      let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutSeconds * 1e9)
      while events.count < count, DispatchTime.now().uptimeNanoseconds < deadline {
        if bus.drain(into: &events) == 0 { bus.waitForPost(timeout: .milliseconds(100)) }
      }
      taken.withLock { $0 = events }
      done.signal()
    }
    thread.start()
  }

  /// Waits for the thread to finish and returns what it took.
  func join() -> [LevelEvent] {
    _ = done.wait(timeout: .now() + timeoutSeconds + 10)
    return taken.withLock { $0 }
  }
}
