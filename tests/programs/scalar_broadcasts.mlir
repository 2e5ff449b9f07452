// 0-d values computed, then broadcast: `linalg.broadcast` of a 0-d tensor is
// classified as a fill, and must not be recomputed as a free fill when it reads
// a value another op computes (an exp of a 0-d argument, a whole-tensor sum).
func.func @scalar_broadcasts(%a: tensor<f32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %ea = linalg.exp ins(%a : tensor<f32>) outs(%e0 : tensor<f32>) -> tensor<f32>
  %e = tensor.empty() : tensor<4x8xf32>
  %ba = linalg.broadcast ins(%ea : tensor<f32>) outs(%e : tensor<4x8xf32>) dimensions = [0, 1]
  %0 = linalg.add ins(%b, %ba : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%b : tensor<4x8xf32>) outs(%init : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %bs = linalg.broadcast ins(%s : tensor<f32>) outs(%e : tensor<4x8xf32>) dimensions = [0, 1]
  %1 = linalg.sub ins(%b, %bs : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
