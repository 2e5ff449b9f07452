// linalg.matvec, linalg.vecmat and linalg.dot (a 0-d result), in upstream syntax.
func.func @vc(%a: tensor<48x70xf32>, %b: tensor<64x48xf32>, %x: tensor<48xf32>, %p: tensor<48xf32>)
    -> (tensor<70xf32>, tensor<64xf32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %e70 = tensor.empty() : tensor<70xf32>
  %i70 = linalg.fill ins(%zero : f32) outs(%e70 : tensor<70xf32>) -> tensor<70xf32>
  %y = linalg.vecmat ins(%x, %a : tensor<48xf32>, tensor<48x70xf32>) outs(%i70 : tensor<70xf32>) -> tensor<70xf32>
  %e64 = tensor.empty() : tensor<64xf32>
  %i64 = linalg.fill ins(%zero : f32) outs(%e64 : tensor<64xf32>) -> tensor<64xf32>
  %z = linalg.matvec ins(%b, %x : tensor<64x48xf32>, tensor<48xf32>) outs(%i64 : tensor<64xf32>) -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %d = linalg.dot ins(%x, %p : tensor<48xf32>, tensor<48xf32>) outs(%i0 : tensor<f32>) -> tensor<f32>
  func.return %y, %z, %d : tensor<70xf32>, tensor<64xf32>, tensor<f32>
}
