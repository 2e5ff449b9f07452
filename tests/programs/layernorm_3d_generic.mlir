// LayerNorm over the last axis of a 3-D bf16 tensor, written as generics with extf/truncf.
#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r = affine_map<(d0, d1, d2) -> (d0, d1)>
#g = affine_map<(d0, d1, d2) -> (d2)>
func.func @ln(%x: tensor<2x37x96xbf16>, %g: tensor<96xbf16>) -> tensor<2x37x96xbf16> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 96.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %er = tensor.empty() : tensor<2x37xf32>
  %ir = linalg.fill ins(%zero : f32) outs(%er : tensor<2x37xf32>) -> tensor<2x37xf32>
  %sum = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x37x96xbf16>) outs(%ir : tensor<2x37xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %s = arith.addf %af, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x37xf32>
  %sq = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x37x96xbf16>) outs(%ir : tensor<2x37xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %m = arith.mulf %af, %af : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x37xf32>
  %e = tensor.empty() : tensor<2x37x96xbf16>
  %y = linalg.generic {indexing_maps = [#x, #r, #r, #g, #x], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %sum, %sq, %g : tensor<2x37x96xbf16>, tensor<2x37xf32>, tensor<2x37xf32>, tensor<96xbf16>) outs(%e : tensor<2x37x96xbf16>) {
  ^bb0(%a: bf16, %s: f32, %q: f32, %gg: bf16, %o: bf16):
    %af = arith.extf %a : bf16 to f32
    %mean = arith.divf %s, %n : f32
    %ex2 = arith.divf %q, %n : f32
    %m2 = arith.mulf %mean, %mean : f32
    %var = arith.subf %ex2, %m2 : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    %c = arith.subf %af, %mean : f32
    %nrm = arith.mulf %c, %rs : f32
    %gf = arith.extf %gg : bf16 to f32
    %out = arith.mulf %nrm, %gf : f32
    %ob = arith.truncf %out : f32 to bf16
    linalg.yield %ob : bf16
  } -> tensor<2x37x96xbf16>
  func.return %y : tensor<2x37x96xbf16>
}
