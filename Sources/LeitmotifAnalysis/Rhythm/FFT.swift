import Glibc

/// A radix-2 fast Fourier transform of real frames, computed as a complex transform of half the
/// length (even samples as real parts, odd samples as imaginary parts) and one untangling pass.
///
/// The onset envelope takes about 250 transforms per second of audio, so everything a transform
/// needs (twiddle factors, the bit-reversal order, the scratch space) is made once, when the
/// analyser is made; a transform allocates nothing.
struct RealFFT {
  /// Half the number of real samples a transform takes: the length of the complex transform
  /// underneath.
  private let half: Int
  /// exp(-2πi·j/half) for j < half/2: the complex transform's butterflies.
  private let butterflyCosines: [Float]
  private let butterflySines: [Float]
  /// exp(-2πi·k/size) for k < half: the untangling of the half-length transform into the real one.
  private let untangleCosines: [Float]
  private let untangleSines: [Float]
  /// Where each element of the complex transform's input goes before the butterflies.
  private let bitReversed: [Int32]
  private var real: [Float]
  private var imaginary: [Float]

  /// A transform of `size` real samples; `size` must be a power of two, at least 4.
  init(size: Int) {
    precondition(size >= 4 && size & (size - 1) == 0, "FFT size must be a power of two >= 4")
    let half = size / 2
    self.half = half
    butterflyCosines = (0..<(half / 2)).map { Float(cos(-2 * Double.pi * Double($0) / Double(half))) }
    butterflySines = (0..<(half / 2)).map { Float(sin(-2 * Double.pi * Double($0) / Double(half))) }
    untangleCosines = (0..<half).map { Float(cos(-2 * Double.pi * Double($0) / Double(size))) }
    untangleSines = (0..<half).map { Float(sin(-2 * Double.pi * Double($0) / Double(size))) }
    var bits = 0
    while 1 << bits < half { bits += 1 }
    bitReversed = (0..<half).map { index in
      var reversed = 0
      for bit in 0..<bits where index & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
      return Int32(reversed)
    }
    real = [Float](repeating: 0, count: half)
    imaginary = [Float](repeating: 0, count: half)
  }

  /// Writes |X[k]|² for k in 0...size/2 of the `size` (twice `half`) real samples at `input`
  /// into `power` (`size / 2 + 1` values), unscaled.
  mutating func powerSpectrum(of input: UnsafePointer<Float>, into power: UnsafeMutablePointer<Float>) {
    let half = self.half
    let order = bitReversed
    let (butterflyCosines, butterflySines) = (self.butterflyCosines, self.butterflySines)
    let (untangleCosines, untangleSines) = (self.untangleCosines, self.untangleSines)
    real.withUnsafeMutableBufferPointer { re in
      imaginary.withUnsafeMutableBufferPointer { im in
        order.withUnsafeBufferPointer { order in
          for index in 0..<half {
            let target = Int(order[index])
            re[target] = input[2 * index]
            im[target] = input[2 * index + 1]
          }
        }
        Self.butterflies(re, im, cosines: butterflyCosines, sines: butterflySines)
        Self.untangle(re, im, cosines: untangleCosines, sines: untangleSines, into: power)
      }
    }
  }

  /// The in-place complex transform of `half` bit-reversed values: log2(half) passes of butterflies.
  private static func butterflies(
    _ re: UnsafeMutableBufferPointer<Float>, _ im: UnsafeMutableBufferPointer<Float>, cosines: [Float], sines: [Float]
  ) {
    let half = re.count
    cosines.withUnsafeBufferPointer { cosines in
      sines.withUnsafeBufferPointer { sines in
        var span = 1
        while span < half {
          let stride = half / (2 * span)
          var start = 0
          while start < half {
            for offset in 0..<span {
              let c = cosines[offset * stride]
              let s = sines[offset * stride]
              let a = start + offset
              let b = a + span
              let br = re[b] * c - im[b] * s
              let bi = re[b] * s + im[b] * c
              re[b] = re[a] - br
              im[b] = im[a] - bi
              re[a] += br
              im[a] += bi
            }
            start += 2 * span
          }
          span *= 2
        }
      }
    }
  }

  /// From Z, the transform of z[n] = x[2n] + i·x[2n+1], to |X[k]|²: X[k] = E[k] + W^k·O[k] with
  /// E[k] = (Z[k] + conj Z[half-k]) / 2 (the even samples' transform) and
  /// O[k] = (Z[k] - conj Z[half-k]) / 2i (the odd samples').
  private static func untangle(
    _ re: UnsafeMutableBufferPointer<Float>, _ im: UnsafeMutableBufferPointer<Float>, cosines: [Float], sines: [Float],
    into power: UnsafeMutablePointer<Float>
  ) {
    let half = re.count
    cosines.withUnsafeBufferPointer { cosines in
      sines.withUnsafeBufferPointer { sines in
        let dc = re[0] + im[0]
        let nyquist = re[0] - im[0]
        power[0] = dc * dc
        power[half] = nyquist * nyquist
        for k in 1..<half {
          let ar = re[k], ai = im[k]
          let br = re[half - k], bi = -im[half - k]
          let evenRe = (ar + br) / 2, evenIm = (ai + bi) / 2
          let oddRe = (ai - bi) / 2, oddIm = -(ar - br) / 2
          let c = cosines[k], s = sines[k]
          let xr = evenRe + c * oddRe - s * oddIm
          let xi = evenIm + c * oddIm + s * oddRe
          power[k] = xr * xr + xi * xi
        }
      }
    }
  }
}
