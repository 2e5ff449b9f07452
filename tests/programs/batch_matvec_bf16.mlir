// A batched contraction too small for tl.dot on bf16 data: multiplied in fp32.
func.func @bmv(%a: tensor<3x40x24xbf16>, %x: tensor<3x24xbf16>) -> tensor<3x40xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<3x40xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%e : tensor<3x40xbf16>) -> tensor<3x40xbf16>
  %y = linalg.batch_matvec ins(%a, %x : tensor<3x40x24xbf16>, tensor<3x24xbf16>) outs(%init : tensor<3x40xbf16>) -> tensor<3x40xbf16>
  func.return %y : tensor<3x40xbf16>
}
