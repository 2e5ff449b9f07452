// y = relu(conv2d(x, w) + b): seed 002's conv2d + bias + activation, one kernel.
// NHWC input, HWCF filter, stride 1, no padding: OH = H - K + 1, OW = W - K + 1
// (re-specialise OH and OW with H and W; no dim may be 2, the strides' length).
// The convolution reads x through a window (oh + kh, ow + kw); tilefuse views it
// as a strided tensor and runs the convolution as a contraction over (kh, kw, c)
// with the bias and ReLU as its epilogue.
// tilefuse.dims: N=4 H=19 W=23 C=12 F=24 OH=17 OW=21 K=3
// tilefuse.dtype: f32
// tilefuse.args: x, w, b
func.func @conv_bias_relu(%x: tensor<4x19x23x12xf32>, %w: tensor<3x3x12x24xf32>,
                          %b: tensor<24xf32>) -> tensor<4x17x21x24xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x17x21x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x17x21x24xf32>) -> tensor<4x17x21x24xf32>
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<4x19x23x12xf32>, tensor<3x3x12x24xf32>)
      outs(%acc : tensor<4x17x21x24xf32>) -> tensor<4x17x21x24xf32>

  // y = max(conv + b, 0)  (bias broadcast over n, oh, ow through the indexing map)
  %y = linalg.generic {
      indexing_maps = [affine_map<(n, h, w, f) -> (n, h, w, f)>,
                       affine_map<(n, h, w, f) -> (f)>,
                       affine_map<(n, h, w, f) -> (n, h, w, f)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %b : tensor<4x17x21x24xf32>, tensor<24xf32>) outs(%empty : tensor<4x17x21x24xf32>) {
  ^bb0(%c: f32, %bias: f32, %out: f32):
    %s = arith.addf %c, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x17x21x24xf32>
  return %y : tensor<4x17x21x24xf32>
}
