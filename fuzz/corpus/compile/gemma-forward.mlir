module {
  func.func @llama(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "model.embed_tokens.weight"}, %arg3: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.input_layernorm.weight"}, %arg4: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.weight"}, %arg5: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.weight"}, %arg6: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.weight"}, %arg7: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.self_attn.o_proj.weight"}, %arg8: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_attention_layernorm.weight"}, %arg9: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.gate_proj.weight"}, %arg10: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.up_proj.weight"}, %arg11: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.down_proj.weight"}, %arg12: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.norm.weight"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.scale %0 {factor = 2.000000e+00 : f64} : tensor<2x2x4xf32>
    %2 = mt.rms_norm %1, %arg3 {mt.layer = 0 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %3 = mt.matmul %2, %arg4 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %4 = mt.split_heads %3 {mt.layer = 0 : i64} : tensor<2x2x8xf32> -> tensor<2x2x2x4xf32>
    %5 = mt.rope %4 {mt.layer = 0 : i64} : tensor<2x2x2x4xf32>
    %6 = mt.matmul %2, %arg5 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %7 = mt.split_heads %6 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x1x2x4xf32>
    %8 = mt.rope %7 {mt.layer = 0 : i64} : tensor<2x1x2x4xf32>
    %9 = mt.matmul %2, %arg6 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %10 = mt.split_heads %9 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x1x2x4xf32>
    %11 = mt.repeat_kv %8 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
    %12 = mt.repeat_kv %10 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
    %13 = mt.attention %5, %11, %12 {mt.layer = 0 : i64} : tensor<2x2x2x4xf32>
    %14 = mt.merge_heads %13 {mt.layer = 0 : i64} : tensor<2x2x2x4xf32> -> tensor<2x2x8xf32>
    %15 = mt.matmul %14, %arg7 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %16 = mt.add %1, %15 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %17 = mt.rms_norm %16, %arg8 {mt.layer = 0 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %18 = mt.matmul %17, %arg9 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %19 = mt.matmul %17, %arg10 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %20 = mt.gelu %18 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %21 = mt.mul %20, %19 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %22 = mt.matmul %21, %arg11 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %23 = mt.add %16, %22 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %24 = mt.rms_norm %23, %arg12 {zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %25 = mt.matmul %24, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %26 = mt.cross_entropy %25, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %26 : tensor<f32>
  }
}
