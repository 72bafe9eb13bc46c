package rest

import (
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

func (p RESTStorageProvider) v1Storage(apiResourceConfigSource serverstorage.APIResourceConfigSource) map[string]rest.Storage {
	storage := map[string]rest.Storage{}
	if resource := "widgets"; apiResourceConfigSource.ResourceEnabled(resourcev1.SchemeGroupVersion.WithResource(resource)) {
		storage[resource] = newWidgetStorage()
	}
	if resource := "widgetclasses"; apiResourceConfigSource.ResourceEnabled(resourcev1.SchemeGroupVersion.WithResource(resource)) {
		storage[resource] = newWidgetClassStorage()
	}
	return storage
}

func (p RESTStorageProvider) v1beta1Storage(apiResourceConfigSource serverstorage.APIResourceConfigSource) map[string]rest.Storage {
	storage := map[string]rest.Storage{}
	if resource := "widgets"; apiResourceConfigSource.ResourceEnabled(resourcev1beta1.SchemeGroupVersion.WithResource(resource)) {
		storage[resource] = newWidgetStorage()
	}
	return storage
}
