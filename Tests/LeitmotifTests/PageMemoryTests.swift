import Testing

@testable import LeitmotifEngine

/// The decode rings' memory (PageMemory): zeroed pages of their own, outside malloc's arenas,
/// so voices that come and go by the thousand (the soak makes 20 a second) cannot fragment them.
@Suite("Page memory for the decode rings")
struct PageMemoryTests {
  @Test("zeroed, writable, and whole pages of their own (malloc's blocks are never page-aligned)")
  func pagesOfItsOwn() {
    let floats = 65_536  // a decode ring's 256 KB
    // malloc returns 16-byte alignment: a block from an arena is page-aligned once in 256, a
    // block it maps for itself never (its header comes first). 16 page-aligned ones are mmap's.
    let blocks = (0..<16).map { _ in PageMemory(floatCount: floats) }
    for block in blocks {
      #expect(Int(bitPattern: block.floats) % 4096 == 0)
      #expect((0..<floats).allSatisfy { block.floats[$0] == 0 })
      block.floats[floats - 1] = 1
      #expect(block.floats[floats - 1] == 1)
    }
  }
}
