package core

func (p *claimEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	result := corev1.ResourceList{}
	if utilfeature.DefaultFeatureGate.Enabled(features.Unrelated) {
		result["count"] = resource.MustParse("1")
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.DRAWidgets) {
		p.addExtendedResourceQuota(result)
	}
	return result, nil
}

func (p *claimEvaluator) addExtendedResourceQuota(usage corev1.ResourceList) {
	usage[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+"example.com/widget")] = resource.MustParse("1")
}
