func.func @attn(%q: tensor<2x40x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x40x16xf32> {
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<2x40x40xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %s = linalg.batch_matmul_transpose_b ins(%q, %k : tensor<2x40x16xf32>, tensor<2x40x16xf32>) outs(%f : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x40x40xf32>) outs(%e : tensor<2x40x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x40x40xf32>
  %er = tensor.empty() : tensor<2x40xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x40xf32>) -> tensor<2x40xf32>
  %mx = linalg.reduce ins(%ss : tensor<2x40x40xf32>) outs(%mi : tensor<2x40xf32>) dimensions = [2]
    (%in: f32, %acc: f32) {
      %t = arith.maximumf %in, %acc : f32
      linalg.yield %t : f32
    }
  %ex = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ss, %mx : tensor<2x40x40xf32>, tensor<2x40xf32>) outs(%e : tensor<2x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<2x40x40xf32>
  %si = linalg.fill ins(%z : f32) outs(%er : tensor<2x40xf32>) -> tensor<2x40xf32>
  %sm = linalg.reduce ins(%ex : tensor<2x40x40xf32>) outs(%si : tensor<2x40xf32>) dimensions = [2]
    (%in: f32, %acc: f32) {
      %t = arith.addf %in, %acc : f32
      linalg.yield %t : f32
    }
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x40x40xf32>, tensor<2x40xf32>) outs(%e : tensor<2x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x40x40xf32>
  %eo = tensor.empty() : tensor<2x40x16xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x40x40xf32>, tensor<2x40x16xf32>) outs(%fo : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  return %o : tensor<2x40x16xf32>
}
