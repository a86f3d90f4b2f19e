//! Tests of `templates`.

use super::*;
use crate::accounts::testutil::Fixture;

fn input(json: &str) -> TemplateInput {
    serde_json::from_str(json).expect("template input")
}

async fn defaults(fx: &Fixture, user_id: &str) -> Vec<String> {
    fx.accounts
        .list_templates(user_id)
        .await
        .expect("list")
        .into_iter()
        .filter(|t| t.is_default)
        .map(|t| t.id)
        .collect()
}

#[tokio::test]
async fn creation_inherits_the_default_template_and_clamps() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let user = account.id.as_str();
    fx.accounts
        .update_template(
            user,
            &account.default_template_id,
            &input(r##"{"fontSize": 90, "fontColor": "#123", "backgroundColor": "#000"}"##),
        )
        .await
        .expect("update default");

    let created = fx
        .accounts
        .create_template(
            user,
            &input(
                r#"{"name": " Big ", "strokeWidth": 50, "animation": "spin",
                      "watermarkPosition": "Top-Left", "id": "ignored"}"#,
            ),
        )
        .await
        .expect("create");
    assert_eq!(created.name, "Big");
    assert_eq!(created.style.font_size, 90.0, "inherited from the default");
    assert_eq!(created.style.font_color, "#112233", "inherited, normalised");
    assert_eq!(created.style.background_color.as_deref(), Some("#000000"));
    assert_eq!(created.style.stroke_width, 20.0, "clamped");
    assert_eq!(created.style.animation, "pop", "unknown value falls back");
    assert_eq!(created.style.watermark_position, "top-left");
    assert!(!created.is_default);
    assert_eq!(created.created_at, "2026-11-21T23:50:06.123Z");
    assert!(created.id != "ignored");

    let json = serde_json::to_value(&created).expect("json");
    for field in [
        "isDefault",
        "fontFamily",
        "positionY",
        "watermarkSize",
        "updatedAt",
    ] {
        assert!(json.get(field).is_some(), "{field} missing from {json}");
    }

    for (body, field) in [
        (r#"{"fontSize": 40}"#, "name"),
        (r#"{"name": "   "}"#, "name"),
        (r#"{"name": "x", "description": "{long}"}"#, "description"),
    ] {
        let body = body.replace("{long}", &"d".repeat(501));
        match fx.accounts.create_template(user, &input(&body)).await {
            Err(AccountError::InvalidInput(message)) => {
                assert!(message.starts_with(field), "{message}")
            }
            other => panic!("expected InvalidInput for {body}, got {other:?}"),
        }
    }
    let long_name = format!(r#"{{"name": "{}"}}"#, "n".repeat(101));
    assert!(fx
        .accounts
        .create_template(user, &input(&long_name))
        .await
        .is_err());
}

#[tokio::test]
async fn update_keeps_omitted_fields_and_tells_null_from_omitted() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let user = account.id.as_str();
    let t = fx
        .accounts
        .create_template(
            user,
            &input(r##"{"name": "A", "backgroundColor": "#FF000080"}"##),
        )
        .await
        .expect("create");
    fx.advance(1000);
    let updated = fx
        .accounts
        .update_template(
            user,
            &t.id,
            &input(r#"{"positionY": -5, "description": "d"}"#),
        )
        .await
        .expect("update");
    assert_eq!(updated.style.position_y, 0.0);
    assert_eq!(updated.name, "A");
    assert_eq!(updated.description, "d");
    assert_eq!(updated.style.background_color.as_deref(), Some("#FF000080"));
    assert_eq!(updated.created_at, t.created_at);
    assert_eq!(updated.updated_at, "2026-11-21T23:50:07.123Z");
    let cleared = fx
        .accounts
        .update_template(user, &t.id, &input(r#"{"backgroundColor": null}"#))
        .await
        .expect("clear");
    assert_eq!(cleared.style.background_color, None);
    assert_eq!(
        fx.accounts.get_template(user, &t.id).await.expect("get"),
        cleared
    );
}

#[tokio::test]
async fn exactly_one_default_and_it_cannot_be_deleted() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let user = account.id.as_str();
    let first = account.default_template_id.clone();

    let err = fx
        .accounts
        .delete_template(user, &first)
        .await
        .expect_err("default");
    assert!(matches!(err, AccountError::Conflict(_)), "{err:?}");
    assert!(err
        .to_string()
        .contains("set another template as the default first"));

    let second = fx
        .accounts
        .create_template(user, &input(r#"{"name": "B", "isDefault": true}"#))
        .await
        .expect("create default");
    assert!(second.is_default);
    assert_eq!(defaults(&fx, user).await, [second.id.as_str()]);
    let err = fx
        .accounts
        .update_template(user, &second.id, &input(r#"{"isDefault": false}"#))
        .await
        .expect_err("unsetting the default");
    assert!(matches!(err, AccountError::Conflict(_)), "{err:?}");

    let moved = fx
        .accounts
        .update_template(user, &first, &input(r#"{"isDefault": true}"#))
        .await
        .expect("move back");
    assert!(moved.is_default);
    assert_eq!(defaults(&fx, user).await, [first.as_str()]);
    fx.accounts
        .delete_template(user, &second.id)
        .await
        .expect("delete non-default");
    let left = fx.accounts.list_templates(user).await.expect("list");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, first);
    assert_eq!(
        fx.accounts
            .get_account(user)
            .await
            .expect("account")
            .default_template_id,
        first
    );
}

#[tokio::test]
async fn other_users_templates_are_not_found() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let (bob, _) = fx.user("bob").await;
    let bobs = bob.default_template_id.as_str();
    let not_found = |result: Result<TemplateView>| {
        assert!(
            matches!(result, Err(AccountError::NotFound(_))),
            "{result:?}"
        )
    };
    not_found(fx.accounts.get_template(&ana.id, bobs).await);
    not_found(
        fx.accounts
            .update_template(&ana.id, bobs, &input(r#"{"name": "x"}"#))
            .await,
    );
    not_found(fx.accounts.get_template(&ana.id, "../../etc").await);
    let err = fx
        .accounts
        .delete_template(&ana.id, bobs)
        .await
        .expect_err("delete");
    assert!(matches!(err, AccountError::NotFound(_)), "{err:?}");
    assert_eq!(
        fx.accounts
            .get_template(&bob.id, bobs)
            .await
            .expect("own")
            .name,
        "Default"
    );
}

#[tokio::test]
async fn resolves_ids_presets_json_and_refuses_garbage() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let (bob, _) = fx.user("bob").await;
    let user = ana.id.as_str();
    let custom = fx
        .accounts
        .create_template(
            user,
            &input(r#"{"name": "Mine", "fontSize": 99, "isDefault": true}"#),
        )
        .await
        .expect("create");
    let resolve = async |spec: &str| fx.accounts.resolve_template(user, spec).await;

    assert_eq!(resolve(&custom.id).await.expect("id").font_size, 99.0);
    assert_eq!(
        resolve("").await.expect("empty").font_size,
        99.0,
        "the default template"
    );
    assert_eq!(resolve("default").await.expect("default").font_size, 99.0);
    let karaoke = resolve(" Karaoke ").await.expect("preset");
    assert_eq!(Some(karaoke), CaptionStyle::preset("karaoke"));

    let json = resolve(r#"{"fontColor": "0f0", "strokeWidth": 99}"#)
        .await
        .expect("json");
    assert_eq!(
        json.font_size, 99.0,
        "JSON inherits the user's default template"
    );
    assert_eq!(json.font_color, "#00FF00");
    assert_eq!(json.stroke_width, 20.0, "clamped");

    for garbage in ["comic-sans", "{not json", r#"{"fontSize": "big"}"#] {
        match resolve(garbage).await {
            Err(AccountError::InvalidInput(message)) => {
                assert!(message.starts_with("captionTemplate:"), "{message}")
            }
            other => panic!("expected InvalidInput for {garbage}, got {other:?}"),
        }
    }
    let err = resolve(&bob.default_template_id)
        .await
        .expect_err("bob's template");
    assert!(matches!(err, AccountError::NotFound(_)), "{err:?}");
    let missing = uuid::Uuid::new_v4().to_string();
    assert!(matches!(
        resolve(&missing).await,
        Err(AccountError::NotFound(_))
    ));
}

#[tokio::test]
async fn template_count_is_capped() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    for i in 1..MAX_TEMPLATES {
        let body = input(&format!(r#"{{"name": "t{i}"}}"#));
        fx.accounts
            .create_template(&ana.id, &body)
            .await
            .expect("create");
    }
    let err = fx
        .accounts
        .create_template(&ana.id, &input(r#"{"name": "one too many"}"#))
        .await
        .expect_err("cap");
    assert!(matches!(err, AccountError::Conflict(_)), "{err:?}");
    assert_eq!(
        fx.accounts
            .list_templates(&ana.id)
            .await
            .expect("list")
            .len(),
        MAX_TEMPLATES
    );
}

#[test]
fn version_one_templates_are_read_with_emphasis_on() {
    let style = CaptionStyle {
        font_size: 90.0,
        ..CaptionStyle::default()
    };
    let v1: TemplateV1 = (
        "t1".into(),
        "Old".into(),
        String::new(),
        (&style).into(),
        1,
        2,
    );
    let mut bytes = crate::storage::record::header(1);
    bincode::serde::encode_into_std_write(&v1, &mut bytes, bincode::config::standard()).unwrap();
    let t: StoredTemplate = crate::storage::kv::decode(&bytes).expect("upgraded");
    assert_eq!((t.id.as_str(), t.style.font_size), ("t1", 90.0));
    assert!(t.style.emphasize_keywords);
    let off = StoredTemplate {
        style: CaptionStyle {
            emphasize_keywords: false,
            ..style
        },
        ..t
    };
    let again: StoredTemplate =
        crate::storage::kv::decode(&crate::storage::kv::encode(&off).unwrap()).unwrap();
    assert_eq!(again, off);
}

#[tokio::test]
async fn keyword_emphasis_is_a_template_field() {
    let fx = Fixture::new();
    let (account, _) = fx.user("eve").await;
    let user = account.id.as_str();
    let t = fx
        .accounts
        .create_template(
            user,
            &input(r#"{"name": "Plain", "emphasizeKeywords": false}"#),
        )
        .await
        .unwrap();
    assert!(!t.style.emphasize_keywords);
    let kept = fx
        .accounts
        .update_template(user, &t.id, &input(r#"{"fontSize": 60}"#))
        .await
        .unwrap();
    assert!(!kept.style.emphasize_keywords, "omitted: kept");
    assert!(
        !fx.accounts
            .resolve_template(user, "Plain")
            .await
            .unwrap()
            .emphasize_keywords
    );
    assert!(
        fx.accounts
            .resolve_template(user, "default")
            .await
            .unwrap()
            .emphasize_keywords
    );
}
