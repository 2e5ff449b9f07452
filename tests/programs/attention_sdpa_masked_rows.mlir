// torch-mlir's decomposition of F.scaled_dot_product_attention with a boolean mask:
// the mask as an additive 0/-inf bias, then the rows whose every score is -inf get
// zero probabilities (select(all_j(s == -inf), 0, softmax(s))). Here the mask is
// `bias < 0` (about half the keys) and row 5 is masked whole: flash-attention keeps
// the zero rows exact (o = sum_j 0 * v there), one kernel.
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#ij = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#s2 = affine_map<(d0, d1) -> ()>
func.func @sdpa(%q: tensor<2x3x37x16xf32>, %k: tensor<2x3x37x16xf32>, %v: tensor<2x3x37x16xf32>, %bias: tensor<37x37xf32>) -> tensor<2x3x37x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %ninf_t = arith.constant dense<0xFF800000> : tensor<f32>
  %zeros = arith.constant dense<0.0> : tensor<2x3x37x37xf32>
  %ninf64 = arith.constant 0xFFF0000000000000 : f64
  %true = arith.constant true
  %c5 = arith.constant 5 : index
  %scale = arith.constant 0.25 : f32
  %eb = tensor.empty() : tensor<37x37xi1>
  %keep = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<37x37xf32>) outs(%eb : tensor<37x37xi1>) {
  ^bb0(%a: f32, %o: i1):
    %i = linalg.index 0 : index
    %not5 = arith.cmpi ne, %i, %c5 : index
    %pos = arith.cmpf oge, %a, %zero : f32
    %r = arith.andi %not5, %pos : i1
    linalg.yield %r : i1
  } -> tensor<37x37xi1>
  %ef = tensor.empty() : tensor<37x37xf32>
  %add = linalg.generic {indexing_maps = [#id2, #s2, #s2, #id2], iterator_types = ["parallel", "parallel"]} ins(%keep, %zero_t, %ninf_t : tensor<37x37xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<37x37xf32>) {
  ^bb0(%c: i1, %a: f32, %b: f32, %o: f32):
    %r = arith.select %c, %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<37x37xf32>
  %es = tensor.empty() : tensor<2x3x37x37xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<2x3x37x37xf32>) -> tensor<2x3x37x37xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x3x37x16xf32>, tensor<2x3x37x16xf32>) outs(%is : tensor<2x3x37x37xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37x37xf32>
  %u = linalg.generic {indexing_maps = [#id4, #ij, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %add : tensor<2x3x37x37xf32>, tensor<37x37xf32>) outs(%es : tensor<2x3x37x37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %scale : f32
    %r = arith.addf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37x37xf32>
  %er = tensor.empty() : tensor<2x3x37xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x3x37xf32>) -> tensor<2x3x37xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<2x3x37x37xf32>) outs(%im : tensor<2x3x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<2x3x37x37xf32>, tensor<2x3x37xf32>) outs(%es : tensor<2x3x37x37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37x37xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%er : tensor<2x3x37xf32>) -> tensor<2x3x37xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x3x37x37xf32>) outs(%iz : tensor<2x3x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x3x37x37xf32>, tensor<2x3x37xf32>) outs(%es : tensor<2x3x37x37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37x37xf32>
  %ei = tensor.empty() : tensor<2x3x37x37xi1>
  %isninf = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u : tensor<2x3x37x37xf32>) outs(%ei : tensor<2x3x37x37xi1>) {
  ^bb0(%a: f32, %o: i1):
    %w = arith.extf %a : f32 to f64
    %r = arith.cmpf oeq, %w, %ninf64 : f64
    linalg.yield %r : i1
  } -> tensor<2x3x37x37xi1>
  %erb = tensor.empty() : tensor<2x3x37xi1>
  %it = linalg.fill ins(%true : i1) outs(%erb : tensor<2x3x37xi1>) -> tensor<2x3x37xi1>
  %all = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<2x3x37x37xi1>) outs(%it : tensor<2x3x37xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %r = arith.andi %a, %acc : i1
    linalg.yield %r : i1
  } -> tensor<2x3x37xi1>
  %pz = linalg.generic {indexing_maps = [#row, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %zeros, %p : tensor<2x3x37xi1>, tensor<2x3x37x37xf32>, tensor<2x3x37x37xf32>) outs(%es : tensor<2x3x37x37xf32>) {
  ^bb0(%c: i1, %a: f32, %b: f32, %o: f32):
    %r = arith.select %c, %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37x37xf32>
  %eo = tensor.empty() : tensor<2x3x37x16xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x3x37x16xf32>) -> tensor<2x3x37x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pz, %v : tensor<2x3x37x37xf32>, tensor<2x3x37x16xf32>) outs(%io : tensor<2x3x37x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x37x16xf32>
  return %o : tensor<2x3x37x16xf32>
}
