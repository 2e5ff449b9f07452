// The sum over every element of a softmax's exponentials: a sum over the rows too is
// not linear in one row's rescale (it was taken for online softmax and crashed).
func.func @f(%x: tensor<9x1025xf32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<9xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<9xf32>) -> tensor<9xf32>
  %m = linalg.reduce ins(%x : tensor<9x1025xf32>) outs(%im : tensor<9xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.maximumf %in, %acc : f32
      linalg.yield %a : f32
    }
  %e = tensor.empty() : tensor<9x1025xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<9x1025xf32>, tensor<9xf32>) outs(%e : tensor<9x1025xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<9x1025xf32>
  %e0 = tensor.empty() : tensor<f32>
  %is = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%ex : tensor<9x1025xf32>) outs(%is : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  return %s : tensor<f32>
}
